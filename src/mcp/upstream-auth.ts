import { createHash, randomBytes } from 'node:crypto';
import { ProtocolError, type AuthProvider, type OAuthTokens } from '@modelcontextprotocol/client';
import { AppError } from '../errors/app-error.js';
import type { Ledger } from '../ledger/service.js';
import { isoAt, type Clock } from '../lib/clock.js';
import { sealText, unsealText } from '../lib/seal.js';
import type { Store } from '../store/index.js';
import { mcpCredentialsRepo } from './credentials/repo.js';
import { authorizationUrl, discover, exchange, formFetch, refresh, register } from './oauth-client.js';
import type { McpCredentialKind, McpCredentialRecord, McpServerRecord } from './records.js';

/**
 * Each agent's own upstream credentials (issue 34): what the proxy sends an upstream MCP server
 * as `Authorization`, chosen for the agent whose session it opens.
 * Rules:
 * - A credential belongs to one (workspace, upstream, holder): an agent, or the workspace. Of
 *   each holder's, an OAuth connection comes before a static secret; an agent's before the
 *   workspace's; last, the upstream's own workspace secret (set when it was added). The console's
 *   own look at an upstream (its tools' pins) uses the workspace's. A caller's own
 *   `Authorization` is never sent upstream: the proxy's transport carries only this.
 * - A static secret per agent is set by an owner or admin (sealed, never shown again) and removed
 *   the same way; each is a ledger record naming the agent, never the secret.
 * - An OAuth connection (oauth-client.ts): the person asks to connect an agent or the workspace,
 *   svc discovers the upstream's authorization server, registers, and answers the authorization
 *   address (PKCE, a state whose hash keys what the callback needs, the verifier sealed, valid
 *   PENDING_MS); the callback, in the same person's session, exchanges the code and stores the
 *   tokens sealed, bound to their holder (a sealed token copied onto another record does not open).
 * - An access token within SKEW_MS of its expiry is refreshed before use, once however many calls
 *   need it at that moment (single-flight, per holder); an upstream's 401 refreshes too. A
 *   refresh that fails leaves the call failing with an error that says to connect again.
 * - An upstream that answers 401 to a holder with no credential fails the call with an error
 *   naming the agent and the missing connection.
 * - Removing an upstream removes its credentials; credentials of a server removed and added again
 *   under the same name are not used (their serverCreatedAt differs).
 */
export const WORKSPACE_HOLDER = '*workspace';
const PURPOSE = 'mcp-upstream-credential';
/** How long a connection under way may take to come back to the callback. */
export const PENDING_MS = 10 * 60_000;
/** An access token this close to its expiry is refreshed before use. */
const SKEW_MS = 30_000;

export type Holder = { agentId: string } | { workspace: true };

/** The `error.data.type` of svc's own verdicts on an upstream's 401 (this holder has no credential, or it was refused). */
export const CREDENTIAL_PROBLEMS: ReadonlySet<string> = new Set([
  'upstream_not_connected',
  'upstream_reconnect_needed',
  'upstream_credential_refused',
]);

const holderId = (h: Holder): string => ('agentId' in h ? h.agentId : WORKSPACE_HOLDER);
const holderOf = (id: string): Holder => (id === WORKSPACE_HOLDER ? { workspace: true } : { agentId: id });
const hashOf = (state: string) => createHash('sha256').update(state, 'utf8').digest('hex');

/** A credential's holder as an error names it. */
const named = (holder: string) => (holder === WORKSPACE_HOLDER ? 'the workspace' : `agent ${holder}`);

export interface CredentialView {
  holder: Holder;
  kind: McpCredentialKind;
  setBy: string;
  setAt: string;
  /** kind 'oauth': when the access token expires (null: not said), when last renewed, what it was granted. */
  expiresAt?: string | null;
  refreshedAt?: string | null;
  scope?: string | null;
  issuer?: string;
}

export function createUpstreamAuth(deps: {
  store: Store;
  clock: Clock;
  masterKey: Buffer;
  ledger: Ledger;
  /** The fetch every upstream request takes (upstream-fetch.ts on the vetted dispatcher). */
  vettedFetch: typeof fetch;
  /** The upstream's workspace secret set when it was added, unsealed; null: none. */
  workspaceSecret: (server: McpServerRecord) => string | null;
  /** The server as stored now (undefined: removed). */
  serverNow: (wid: string, name: string) => Promise<McpServerRecord | undefined>;
}) {
  const { store, clock, masterKey, ledger } = deps;
  const repo = mcpCredentialsRepo(store);
  const fetchFn = formFetch(deps.vettedFetch);
  const bound = (wid: string, server: string, holder: string, kind: McpCredentialKind, field: string) =>
    `${wid}/${server}/${holder}/${kind}/${field}`;
  const seal = (c: Pick<McpCredentialRecord, 'workspaceId' | 'server' | 'holder' | 'kind'>, field: string, v: string) =>
    sealText(masterKey, PURPOSE, bound(c.workspaceId, c.server, c.holder, c.kind, field), v);
  const unseal = (
    c: Pick<McpCredentialRecord, 'workspaceId' | 'server' | 'holder' | 'kind'>,
    field: string,
    v: string,
  ) => unsealText(masterKey, PURPOSE, bound(c.workspaceId, c.server, c.holder, c.kind, field), v);
  const pendingBound = (stateHash: string, field: string) => `pending/${stateHash}/${field}`;

  const requireAgent = async (wid: string, agentId: string) => {
    if (!(await repo.agent(wid, agentId)))
      throw new AppError('not_found', { message: `No agent ${agentId} in this workspace.` });
  };

  /** The credential record of one holder and kind for this server, when it belongs to this server's life. */
  const current = async (server: McpServerRecord, holder: string, kind: McpCredentialKind) => {
    const c = await repo.get(server.workspaceId, server.name, holder, kind);
    return c && c.serverCreatedAt === server.createdAt ? c : undefined;
  };

  /** The OAuth record as tokens (the access token and what refreshing needs). */
  const tokensRecord = (
    base: Pick<McpCredentialRecord, 'workspaceId' | 'server' | 'serverCreatedAt' | 'holder'>,
    at: { issuer: string; metadata: Record<string, unknown>; resource: string | null },
    client: { clientId: string; clientSecret: string | null },
    tokens: OAuthTokens,
    previousRefresh: string | null,
  ): McpCredentialRecord['oauth'] => {
    const c = { ...base, kind: 'oauth' as const };
    const refreshToken = tokens.refresh_token ?? previousRefresh;
    return {
      accessSealed: seal(c, 'access', tokens.access_token),
      refreshSealed: refreshToken ? seal(c, 'refresh', refreshToken) : null,
      expiresAt: typeof tokens.expires_in === 'number' ? isoAt(clock.now() + tokens.expires_in * 1000) : null,
      scope: tokens.scope ?? null,
      issuer: at.issuer,
      metadata: at.metadata,
      clientId: client.clientId,
      clientSecretSealed: client.clientSecret ? seal(c, 'client', client.clientSecret) : null,
      resource: at.resource,
    };
  };

  const reconnect = (server: McpServerRecord, holder: string, why: string) =>
    new ProtocolError(
      -32003,
      `The upstream MCP server ${server.name}'s authorization for ${named(holder)} could not be renewed (${why}): connect again in the console (MCP, ${server.name}).`,
      { type: 'upstream_reconnect_needed', server: server.name, holder: holderOf(holder) },
    );

  // One refresh at a time per holder: the calls that find the token old at once share it.
  const refreshing = new Map<string, Promise<string>>();
  const renew = (server: McpServerRecord, holder: string, usedAccess: string): Promise<string> => {
    const key = `${server.workspaceId}/${server.name}/${holder}`;
    let pending = refreshing.get(key);
    if (!pending) {
      pending = (async () => {
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
        const oauth = tokensRecord(c, c.oauth, client, tokens, refreshToken);
        await store.write(async () => {
          const still = await current(server, holder, 'oauth');
          if (still?.oauth?.accessSealed === usedAccess)
            await repo.put({ ...still, oauth: oauth!, refreshedAt: isoAt(clock.now()) });
        });
        return tokens.access_token;
      })().finally(() => refreshing.delete(key));
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

  const record = async (wid: string, actor: string, kind: string, server: string, data: Record<string, unknown>) =>
    ledger.record({ workspaceId: wid, actor, kind, subject: server, data: { server, ...data } as never });

  return {
    /** The credential a request of this agent's (or the workspace's) to the upstream carries now. */
    credential: (server: McpServerRecord, agentId?: string): Promise<string | undefined> =>
      tokenOf(server, agentId).catch(() => undefined),
    /**
     * The transport's credential for one agent's session of an upstream (agentId undefined: the
     * workspace's), read before every request; a 401 renews an OAuth token or fails naming what to do.
     */
    provider(server: McpServerRecord, agentId?: string): AuthProvider {
      return {
        token: () => tokenOf(server, agentId),
        onUnauthorized: async () => {
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
        },
      };
    },

    /** Every credential of an upstream, without its secrets. */
    async list(server: McpServerRecord): Promise<CredentialView[]> {
      return (await repo.of(server.workspaceId, server.name))
        .filter((c) => c.serverCreatedAt === server.createdAt)
        .map((c) => ({
          holder: holderOf(c.holder),
          kind: c.kind,
          setBy: c.setBy,
          setAt: c.setAt,
          ...(c.oauth
            ? {
                expiresAt: c.oauth.expiresAt,
                refreshedAt: c.refreshedAt ?? null,
                scope: c.oauth.scope,
                issuer: c.oauth.issuer,
              }
            : {}),
        }));
    },

    /** Sets an agent's own static secret for an upstream (sealed; a ledger record without it). */
    async setSecret(server: McpServerRecord, agentId: string, secret: string, actor: string): Promise<CredentialView> {
      await requireAgent(server.workspaceId, agentId);
      const base = {
        workspaceId: server.workspaceId,
        server: server.name,
        serverCreatedAt: server.createdAt,
        holder: agentId,
        kind: 'secret' as const,
      };
      const c: McpCredentialRecord = {
        ...base,
        secretSealed: seal(base, 'secret', secret),
        setBy: actor,
        setAt: isoAt(clock.now()),
      };
      await store.write(async () => {
        await repo.put(c);
        await record(server.workspaceId, actor, 'mcp.credential_set', server.name, { agentId, kind: 'secret' });
      });
      return { holder: { agentId }, kind: 'secret', setBy: c.setBy, setAt: c.setAt };
    },

    /** Removes a holder's credential of one kind (a static secret, or an OAuth connection). */
    async remove(server: McpServerRecord, holder: Holder, kind: McpCredentialKind, actor: string): Promise<void> {
      const id = holderId(holder);
      await store.write(async () => {
        if (!(await repo.remove(server.workspaceId, server.name, id, kind)))
          throw new AppError('not_found', {
            message: `${named(id)} has no ${kind === 'oauth' ? 'connection' : 'secret'} for the upstream MCP server ${server.name}.`,
          });
        await record(
          server.workspaceId,
          actor,
          kind === 'oauth' ? 'mcp.disconnected' : 'mcp.credential_removed',
          server.name,
          { ...('agentId' in holder ? { agentId: holder.agentId } : { workspace: true }), kind },
        );
      });
    },

    /** Inside the write that removes a server: its credentials go with it. */
    async removeAllInWrite(wid: string, server: string): Promise<void> {
      await repo.removeAll(wid, server);
    },

    /**
     * Starts an OAuth connection of a holder to an upstream, for the person asking: discovery,
     * registration, then the authorization address their browser goes to.
     */
    async connect(
      server: McpServerRecord,
      holder: Holder,
      person: { userId: string; actor: string },
      redirectUri: string,
    ): Promise<{ authorizationUrl: string; expiresAt: string }> {
      if ('agentId' in holder) await requireAgent(server.workspaceId, holder.agentId);
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
          verifierSealed: sealText(masterKey, PURPOSE, pendingBound(stateHash, 'verifier'), verifier),
          redirectUri,
          issuer: found.issuer,
          metadata: found.metadata as unknown as Record<string, unknown>,
          clientId: client.clientId,
          clientSecretSealed: client.clientSecret
            ? sealText(masterKey, PURPOSE, pendingBound(stateHash, 'client'), client.clientSecret)
            : null,
          resource: found.resource,
          expiresAt,
        });
      });
      return { authorizationUrl: url, expiresAt };
    },

    /**
     * The authorization server's answer at svc's callback, in the session of the person who
     * started it: the code exchanged, the tokens stored sealed. Returns where it belonged.
     */
    async finish(
      answer: { code?: string; state: string; iss?: string; error?: string },
      userId: string,
    ): Promise<{ workspaceId: string; server: string; holder: Holder }> {
      const stateHash = hashOf(answer.state);
      const p = await repo.pending(stateHash);
      if (!p || p.userId !== userId || Date.parse(p.expiresAt) <= clock.now())
        throw new AppError('invalid_request', {
          message:
            'This connection is unknown, expired, or was started by someone else: start it again from the console.',
        });
      await store.write(async () => repo.removePending(stateHash));
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
        clientSecret: p.clientSecretSealed
          ? unsealText(masterKey, PURPOSE, pendingBound(stateHash, 'client'), p.clientSecretSealed)
          : null,
      };
      const verifier = unsealText(masterKey, PURPOSE, pendingBound(stateHash, 'verifier'), p.verifierSealed);
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
        oauth: tokensRecord(base, p, client, tokens, null)!,
        setBy: p.actor,
        setAt: isoAt(clock.now()),
      };
      await store.write(async () => {
        await repo.put(c);
        await record(p.workspaceId, p.actor, 'mcp.connected', p.server, {
          ...('agentId' in where.holder ? { agentId: where.holder.agentId } : { workspace: true }),
          issuer: p.issuer,
          scope: c.oauth!.scope,
        });
      });
      return where;
    },
  };
}

export type UpstreamAuth = ReturnType<typeof createUpstreamAuth>;
