import { createHash, randomBytes } from 'node:crypto';
import type { OAuthTokens } from '@modelcontextprotocol/client';
import { AppError } from '../../errors/app-error.js';
import type { Ledger } from '../../ledger/service.js';
import { isoAt, type Clock } from '../../lib/clock.js';
import type { Store } from '../../store/index.js';
import type { McpCredentialsRepo } from '../credentials/repo.js';
import { authorizationUrl, discover, exchange, register, type FormFetch } from '../oauth-client.js';
import type { McpCredentialRecord, McpServerRecord } from '../records.js';
import { holderId, holderOf, type Holder } from './holders.js';
import type { CredentialSealing } from './sealing.js';

/**
 * An OAuth connection of a holder to an upstream (oauth-client.ts), in two steps:
 * 1. connect: for the person asking, svc discovers the upstream's authorization server,
 *    registers, and answers the authorization address (PKCE, a state whose hash keys what the
 *    callback needs, the verifier sealed, valid PENDING_MS);
 * 2. finish: the callback, in the same person's session, checks the state (known, not expired,
 *    the same person's), that the authorization server authorized, and that the server is the
 *    same one (not removed and added again meanwhile); then it exchanges the code and stores the
 *    tokens sealed, bound to their holder, with a ledger record.
 */

/** How long a connection under way may take to come back to the callback. */
export const PENDING_MS = 10 * 60_000;

const hashOf = (state: string) => createHash('sha256').update(state, 'utf8').digest('hex');

export interface OAuthConnecting {
  /**
   * Starts an OAuth connection of a holder to an upstream, for the person asking: discovery,
   * registration, then the authorization address their browser goes to.
   */
  connect(
    server: McpServerRecord,
    holder: Holder,
    person: { userId: string; actor: string },
    redirectUri: string,
  ): Promise<{ authorizationUrl: string; expiresAt: string }>;
  /**
   * The authorization server's answer at svc's callback, in the session of the person who
   * started it: the code exchanged, the tokens stored sealed. Returns where it belonged.
   */
  finish(
    answer: { code?: string; state: string; iss?: string; error?: string },
    userId: string,
  ): Promise<{ workspaceId: string; server: string; holder: Holder }>;
}

export function createOAuthConnecting(deps: {
  store: Store;
  clock: Clock;
  ledger: Ledger;
  repo: McpCredentialsRepo;
  sealing: CredentialSealing;
  fetchFn: FormFetch;
  /** Refuses an agent that is not the workspace's. */
  requireAgent: (wid: string, agentId: string) => Promise<void>;
  /** The server as stored now (undefined: removed). */
  serverNow: (wid: string, name: string) => Promise<McpServerRecord | undefined>;
}): OAuthConnecting {
  const { store, clock, ledger, repo, sealing, fetchFn } = deps;

  /** The pending connection the state names, checked: known, not expired, the same person's; removed as it is used. */
  const pendingOf = async (state: string, userId: string) => {
    const stateHash = hashOf(state);
    const p = await repo.pending(stateHash);
    if (!p || p.userId !== userId || Date.parse(p.expiresAt) <= clock.now())
      throw new AppError('invalid_request', {
        message:
          'This connection is unknown, expired, or was started by someone else: start it again from the console.',
      });
    await store.write(async () => repo.removePending(stateHash));
    return { p, stateHash };
  };

  return {
    async connect(server, holder, person, redirectUri) {
      if ('agentId' in holder) await deps.requireAgent(server.workspaceId, holder.agentId);
      const state = randomBytes(32).toString('base64url');
      let found;
      let client;
      let url;
      let verifier;
      try {
        found = await discover(server.url, fetchFn);
        client = await register(found, redirectUri, fetchFn);
        ({ url, verifier } = await authorizationUrl(found, client, redirectUri, state));
      } catch (err) {
        throw new AppError('upstream_failure', {
          message: `The upstream MCP server ${server.name} could not be connected with OAuth: ${(err as Error).message}.`,
        });
      }
      const stateHash = hashOf(state);
      const expiresAt = isoAt(clock.now() + PENDING_MS);
      await store.write(async () => {
        await repo.putPending(stateHash, {
          workspaceId: server.workspaceId,
          server: server.name,
          serverCreatedAt: server.createdAt,
          holder: holderId(holder),
          userId: person.userId,
          actor: person.actor,
          verifierSealed: sealing.sealPending(stateHash, 'verifier', verifier),
          redirectUri,
          issuer: found.issuer,
          metadata: found.metadata as unknown as Record<string, unknown>,
          clientId: client.clientId,
          clientSecretSealed: client.clientSecret
            ? sealing.sealPending(stateHash, 'client', client.clientSecret)
            : null,
          resource: found.resource,
          expiresAt,
        });
      });
      return { authorizationUrl: url, expiresAt };
    },

    async finish(answer, userId) {
      const { p, stateHash } = await pendingOf(answer.state, userId);
      const where = { workspaceId: p.workspaceId, server: p.server, holder: holderOf(p.holder) };
      if (answer.error || !answer.code)
        throw new AppError('invalid_request', {
          message: `The authorization server did not authorize the connection (${answer.error ?? 'no code'}).`,
        });
      const server = await deps.serverNow(p.workspaceId, p.server);
      if (!server || server.createdAt !== p.serverCreatedAt)
        throw new AppError('not_found', { message: `The upstream MCP server ${p.server} was removed meanwhile.` });
      const client = {
        clientId: p.clientId,
        clientSecret: p.clientSecretSealed ? sealing.unsealPending(stateHash, 'client', p.clientSecretSealed) : null,
      };
      const verifier = sealing.unsealPending(stateHash, 'verifier', p.verifierSealed);
      let tokens: OAuthTokens;
      try {
        tokens = await exchange(
          p,
          client,
          {
            code: answer.code,
            ...(answer.iss !== undefined ? { iss: answer.iss } : {}),
            verifier,
            redirectUri: p.redirectUri,
          },
          fetchFn,
        );
      } catch (err) {
        throw new AppError('upstream_failure', {
          message: `The authorization server of ${p.server} refused the code: ${(err as Error).message}.`,
        });
      }
      const base = {
        workspaceId: p.workspaceId,
        server: p.server,
        serverCreatedAt: p.serverCreatedAt,
        holder: p.holder,
      };
      const c: McpCredentialRecord = {
        ...base,
        kind: 'oauth',
        oauth: sealing.tokensRecord(base, p, client, tokens, null),
        setBy: p.actor,
        setAt: isoAt(clock.now()),
      };
      await store.write(async () => {
        await repo.put(c);
        await ledger.record({
          workspaceId: p.workspaceId,
          actor: p.actor,
          kind: 'mcp.connected',
          subject: p.server,
          data: {
            server: p.server,
            ...('agentId' in where.holder ? { agentId: where.holder.agentId } : { workspace: true }),
            issuer: p.issuer,
            scope: c.oauth!.scope,
          } as never,
        });
      });
      return where;
    },
  };
}
