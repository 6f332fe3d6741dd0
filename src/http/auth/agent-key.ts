import type { Server } from '@hapi/hapi';
import { AppError } from '../../errors/app-error.js';
import type { TableValue } from '../../store/index.js';
import { hasPrefix } from '../../lib/ids.js';
import type { RateLimiter } from '../rate-limit.js';
import { svcOptions } from '../route-options.js';
import { AGENT_KEY, credentials, expectedCredential, type KeyResolver } from './callers.js';
import { bearer } from './bearer.js';

// The record shapes this piece handles, as the store's registry declares them (the domains own
// them in their records.ts, a layer above this one).
type AgentRecord = TableValue<'agents'>;
type KeyRecord = TableValue<'keys'>;

/**
 * Agent key (docs/security.md#security-model): Authorization: Bearer ask_… bound to one agent. At /mcp an OAuth
 * access token (aat_, docs/mcp-oauth.md) is taken exactly alike, for the agent its connection is bound to.
 * At /mcp a 401 challenges with `Bearer resource_metadata="…", scope="svc:agent offline_access"`
 * (RFC 9728 5.1, RFC 6750 3), and with `error="invalid_token"` when a token was sent but is
 * unknown, expired or revoked (RFC 6750 3.1; none when no token was sent).
 * - no ask_ bearer: 401 unauthenticated (other kinds of credential are not read);
 * - unknown, expired or revoked: 401 invalid_api_key (one answer for all three);
 * - a workspace key (not bound to an agent): 403 agent_key_required;
 * - its agent was removed: 403 agent_not_found.
 * On gate routes (`plugins.svc.gateRateLimit`) the agent's per-minute limit is taken here, before
 * the body is read, so every answer after authentication (a body that is not JSON included)
 * counts and carries ratelimit-limit, ratelimit-remaining and ratelimit-reset; past the limit:
 * 429 rate_limited with retry-after.
 */
/** What the strategy asks of the OAuth service at /mcp: the agent an access token stands for, or undefined. */
export interface AccessResolver {
  /** The scope a 401 at /mcp names: what a client should ask for (RFC 6750 3). */
  readonly challengeScope: string;
  resolveAccess(value: string): Promise<{ workspaceId: string; agent: AgentRecord; connectionId: string } | undefined>;
}

export function registerAgentKey(
  server: Server,
  deps: { keys: KeyResolver; oauth: AccessResolver; gateLimiter: RateLimiter; baseUrl: () => string },
): void {
  server.auth.scheme(AGENT_KEY, () => ({
    async authenticate(request, h) {
      // On /mcp a 401 names where to learn how to get a token (RFC 9728 section 5.1).
      const mcp = svcOptions(request.route.settings).mcpChallenge === true;
      const challengeWith = (error?: string) =>
        mcp
          ? {
              headers: {
                'www-authenticate': `Bearer resource_metadata="${deps.baseUrl()}/.well-known/oauth-protected-resource/mcp", scope="${deps.oauth.challengeScope}"${
                  error ? `, error="invalid_token", error_description="${error}"` : ''
                }`,
              },
            }
          : {};
      const challenge = challengeWith();
      const value = bearer(request);
      // At /mcp an OAuth access token stands for its agent exactly as the agent's key does.
      if (mcp && value && hasPrefix(value, 'aat')) {
        const access = await deps.oauth.resolveAccess(value);
        if (!access)
          throw new AppError('invalid_api_key', {
            message: 'The access token is unknown, expired, or its connection ended.',
            fix: 'Refresh it, or connect the client again.',
            ...challengeWith('The access token is unknown, expired, or its connection ended'),
          });
        return h.authenticated({
          credentials: credentials({
            kind: 'agent',
            workspaceId: access.workspaceId,
            agent: access.agent,
            key: {
              id: access.connectionId,
              workspaceId: access.workspaceId,
              scope: 'agent',
              agentId: access.agent.id,
            } as KeyRecord,
          }),
        });
      }
      if (!value || !hasPrefix(value, 'ask')) {
        throw new AppError('unauthenticated', {
          message: `This route takes ${expectedCredential[AGENT_KEY]}; none was sent.`,
          ...challenge,
        });
      }
      const resolved = await deps.keys.resolve(value);
      if (!resolved) throw new AppError('invalid_api_key', challengeWith('The key is unknown, expired or revoked'));
      if (resolved.record.scope !== 'agent') throw new AppError('agent_key_required');
      if (!resolved.agent || resolved.agent.removedAt)
        throw new AppError('agent_not_found', { details: { agentId: resolved.record.agentId! } });
      if (svcOptions(request.route.settings).gateRateLimit) {
        const d = await deps.gateLimiter.take(resolved.agent.id);
        request.app.responseHeaders = {
          'ratelimit-limit': String(d.limit),
          'ratelimit-remaining': String(d.remaining),
          'ratelimit-reset': String(d.resetSeconds),
        };
        if (!d.allowed) {
          throw new AppError('rate_limited', {
            message: `This agent sent more than ${d.limit} gate requests this minute.`,
            headers: { 'retry-after': String(d.resetSeconds) },
          });
        }
      }
      return h.authenticated({
        credentials: credentials({
          kind: 'agent',
          workspaceId: resolved.record.workspaceId,
          agent: resolved.agent,
          key: resolved.record,
        }),
      });
    },
  }));
  server.auth.strategy(AGENT_KEY, AGENT_KEY);
}
