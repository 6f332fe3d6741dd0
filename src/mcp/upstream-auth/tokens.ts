import { ProtocolError, type AuthProvider, type OAuthTokens } from '@modelcontextprotocol/client';
import { isoAt, type Clock } from '../../lib/clock.js';
import type { Store } from '../../store/index.js';
import type { McpCredentialsRepo } from '../credentials/repo.js';
import { refresh, type FormFetch } from '../oauth-client.js';
import type { McpCredentialKind, McpCredentialRecord, McpServerRecord } from '../records.js';
import { holderOf, named, WORKSPACE_HOLDER } from './holders.js';
import type { CredentialSealing } from './sealing.js';

/**
 * What a request to an upstream carries, chosen at every request: of the agent's and then the
 * workspace's credentials, an OAuth connection before a static secret; last, the upstream's own
 * workspace secret. An access token within SKEW_MS of its expiry is refreshed before use, once
 * however many calls need it at that moment (single-flight, per holder); an upstream's 401
 * refreshes too, or fails naming what to do.
 */

/** An access token this close to its expiry is refreshed before use. */
const SKEW_MS = 30_000;

export interface UpstreamTokens {
  /** The credential a request of this agent's (or the workspace's) to the upstream carries now; undefined: none, or it could not be renewed. */
  credential(server: McpServerRecord, agentId?: string): Promise<string | undefined>;
  /**
   * The transport's credential for one agent's session of an upstream (agentId undefined: the
   * workspace's), read before every request; a 401 renews an OAuth token or fails naming what to do.
   */
  provider(server: McpServerRecord, agentId?: string): AuthProvider;
}

export function createUpstreamTokens(deps: {
  store: Store;
  clock: Clock;
  repo: McpCredentialsRepo;
  sealing: CredentialSealing;
  fetchFn: FormFetch;
  /** The upstream's workspace secret set when it was added, unsealed; null: none. */
  workspaceSecret: (server: McpServerRecord) => string | null;
}): UpstreamTokens {
  const { store, clock, repo, sealing, fetchFn } = deps;
  const { unseal, current } = sealing;

  const reconnect = (server: McpServerRecord, holder: string, why: string) =>
    new ProtocolError(
      -32003,
      `The upstream MCP server ${server.name}'s authorization for ${named(holder)} could not be renewed (${why}): connect again in the console (MCP, ${server.name}).`,
      { type: 'upstream_reconnect_needed', server: server.name, holder: holderOf(holder) },
    );

  /** One refresh of a holder's token: the renewed access token, stored unless renewed meanwhile. */
  const refreshed = async (server: McpServerRecord, holder: string, usedAccess: string): Promise<string> => {
    const c = await current(server, holder, 'oauth');
    if (!c?.oauth) throw reconnect(server, holder, 'the connection was removed');
    // Renewed since this token was read: the renewed one is used.
    if (c.oauth.accessSealed !== usedAccess) return unseal(c, 'access', c.oauth.accessSealed);
    if (!c.oauth.refreshSealed) throw reconnect(server, holder, 'the authorization server gave no refresh token');
    const client = {
      clientId: c.oauth.clientId,
      clientSecret: c.oauth.clientSecretSealed ? unseal(c, 'client', c.oauth.clientSecretSealed) : null,
    };
    const refreshToken = unseal(c, 'refresh', c.oauth.refreshSealed);
    let tokens: OAuthTokens;
    try {
      tokens = await refresh(c.oauth, client, refreshToken, fetchFn);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      throw reconnect(server, holder, typeof code === 'string' ? code : 'the authorization server refused');
    }
    const oauth = sealing.tokensRecord(c, c.oauth, client, tokens, refreshToken);
    await store.write(async () => {
      const still = await current(server, holder, 'oauth');
      if (still?.oauth?.accessSealed === usedAccess)
        await repo.put({ ...still, oauth, refreshedAt: isoAt(clock.now()) });
    });
    return tokens.access_token;
  };

  // One refresh at a time per holder: the calls that find the token old at once share it.
  const refreshing = new Map<string, Promise<string>>();
  const renew = (server: McpServerRecord, holder: string, usedAccess: string): Promise<string> => {
    const key = `${server.workspaceId}/${server.name}/${holder}`;
    let pending = refreshing.get(key);
    if (!pending) {
      pending = refreshed(server, holder, usedAccess).finally(() => refreshing.delete(key));
      refreshing.set(key, pending);
    }
    return pending;
  };

  /** What is sent upstream for this agent (undefined: the console's look), and whose it is. */
  const choose = async (
    server: McpServerRecord,
    agentId: string | undefined,
  ): Promise<{ holder: string; kind: McpCredentialKind | 'server'; record?: McpCredentialRecord } | undefined> => {
    // Read before every request to the upstream: the agent's and the workspace's, together.
    const holders = agentId ? [agentId, WORKSPACE_HOLDER] : [WORKSPACE_HOLDER];
    const found = await Promise.all(holders.map((h) => repo.holder(server.workspaceId, server.name, h)));
    for (const [i, holder] of holders.entries())
      for (const kind of ['oauth', 'secret'] as const) {
        const record = found[i]!.find((c) => c.kind === kind && c.serverCreatedAt === server.createdAt);
        if (record) return { holder, kind, record };
      }
    return server.secretSealed ? { holder: WORKSPACE_HOLDER, kind: 'server' } : undefined;
  };

  const tokenOf = async (server: McpServerRecord, agentId: string | undefined): Promise<string | undefined> => {
    const chosen = await choose(server, agentId);
    if (!chosen) return undefined;
    if (chosen.kind === 'server') return deps.workspaceSecret(server) ?? undefined;
    const c = chosen.record!;
    if (c.kind === 'secret') return unseal(c, 'secret', c.secretSealed!);
    const o = c.oauth!;
    if (o.expiresAt !== null && Date.parse(o.expiresAt) - SKEW_MS <= clock.now())
      return renew(server, chosen.holder, o.accessSealed);
    return unseal(c, 'access', o.accessSealed);
  };

  /** An upstream's 401: an OAuth token renewed, else an error naming what to do. */
  const unauthorized = async (server: McpServerRecord, agentId: string | undefined): Promise<void> => {
    const chosen = await choose(server, agentId);
    if (!chosen)
      throw new ProtocolError(
        -32003,
        agentId
          ? `The upstream MCP server ${server.name} asks for authorization, and agent ${agentId} has no connection to it (nor has the workspace). Connect the agent in the console (MCP, ${server.name}: Connect an agent).`
          : `The upstream MCP server ${server.name} asks for authorization, and the workspace has no connection to it. Connect the workspace in the console (MCP, ${server.name}).`,
        { type: 'upstream_not_connected', server: server.name, ...(agentId ? { agentId } : {}) },
      );
    if (chosen.kind === 'oauth') {
      await renew(server, chosen.holder, chosen.record!.oauth!.accessSealed);
      return;
    }
    throw new ProtocolError(
      -32003,
      `The upstream MCP server ${server.name} refused the static secret of ${named(chosen.holder)}: set it again in the console (MCP, ${server.name}).`,
      { type: 'upstream_credential_refused', server: server.name, holder: holderOf(chosen.holder) },
    );
  };

  return {
    credential: (server, agentId) => tokenOf(server, agentId).catch(() => undefined),
    provider: (server, agentId) => ({
      token: () => tokenOf(server, agentId),
      onUnauthorized: () => unauthorized(server, agentId),
    }),
  };
}
