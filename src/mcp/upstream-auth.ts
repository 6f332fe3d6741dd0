import type { AuthProvider } from '@modelcontextprotocol/client';
import { AppError } from '../errors/app-error.js';
import type { Ledger } from '../ledger/service.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { Store } from '../store/index.js';
import { mcpCredentialsRepo } from './credentials/repo.js';
import { formFetch } from './oauth-client.js';
import type { McpCredentialKind, McpCredentialRecord, McpServerRecord } from './records.js';
import { createOAuthConnecting, type OAuthConnecting } from './upstream-auth/connect.js';
import { holderId, holderOf, named, type Holder } from './upstream-auth/holders.js';
import { createCredentialSealing } from './upstream-auth/sealing.js';
import { createUpstreamTokens, type UpstreamTokens } from './upstream-auth/tokens.js';

export { PENDING_MS } from './upstream-auth/connect.js';
export { CREDENTIAL_PROBLEMS, WORKSPACE_HOLDER, type Holder } from './upstream-auth/holders.js';

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
 *   tokens sealed, bound to their holder (a sealed token copied onto another record does not
 *   open). upstream-auth/connect.ts.
 * - An access token within SKEW_MS of its expiry is refreshed before use, once however many calls
 *   need it at that moment (single-flight, per holder); an upstream's 401 refreshes too. A
 *   refresh that fails leaves the call failing with an error that says to connect again.
 *   upstream-auth/tokens.ts.
 * - An upstream that answers 401 to a holder with no credential fails the call with an error
 *   naming the agent and the missing connection.
 * - Removing an upstream removes its credentials; credentials of a server removed and added again
 *   under the same name are not used (their serverCreatedAt differs).
 */

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

/**
 * The upstream credentials' contract: what requests carry (UpstreamTokens), the OAuth
 * connections (OAuthConnecting), and an owner's or admin's list, static secrets and removals.
 * It reads and writes `mcpCredentials` and `mcpOAuthPending`, reads `agents`, and writes ledger
 * records (`mcp.credential_set`, `mcp.credential_removed`, `mcp.connected`, `mcp.disconnected`),
 * never a secret.
 */
export interface UpstreamAuth extends UpstreamTokens, OAuthConnecting {
  /** The credential a request of this agent's (or the workspace's) to the upstream carries now. */
  credential(server: McpServerRecord, agentId?: string): Promise<string | undefined>;
  /** The transport's credential for one agent's session of an upstream (agentId undefined: the workspace's). */
  provider(server: McpServerRecord, agentId?: string): AuthProvider;
  /** Every credential of an upstream, without its secrets. */
  list(server: McpServerRecord): Promise<CredentialView[]>;
  /** Sets an agent's own static secret for an upstream (sealed; a ledger record without it). */
  setSecret(server: McpServerRecord, agentId: string, secret: string, actor: string): Promise<CredentialView>;
  /** Removes a holder's credential of one kind (a static secret, or an OAuth connection). */
  remove(server: McpServerRecord, holder: Holder, kind: McpCredentialKind, actor: string): Promise<void>;
  /** Inside the write that removes a server: its credentials go with it. */
  removeAllInWrite(wid: string, server: string): Promise<void>;
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
}): UpstreamAuth {
  const { store, clock, ledger } = deps;
  const repo = mcpCredentialsRepo(store);
  const fetchFn = formFetch(deps.vettedFetch);
  const sealing = createCredentialSealing({ masterKey: deps.masterKey, clock, repo });

  const requireAgent = async (wid: string, agentId: string) => {
    if (!(await repo.agent(wid, agentId)))
      throw new AppError('not_found', { message: `No agent ${agentId} in this workspace.` });
  };
  const record = async (wid: string, actor: string, kind: string, server: string, data: Record<string, unknown>) =>
    ledger.record({ workspaceId: wid, actor, kind, subject: server, data: { server, ...data } as never });

  const tokens = createUpstreamTokens({
    store,
    clock,
    repo,
    sealing,
    fetchFn,
    workspaceSecret: deps.workspaceSecret,
  });
  const connecting = createOAuthConnecting({
    store,
    clock,
    ledger,
    repo,
    sealing,
    fetchFn,
    requireAgent,
    serverNow: deps.serverNow,
  });

  return {
    credential: tokens.credential,
    provider: tokens.provider,
    connect: connecting.connect,
    finish: connecting.finish,

    async list(server) {
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

    async setSecret(server, agentId, secret, actor) {
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
        secretSealed: sealing.seal(base, 'secret', secret),
        setBy: actor,
        setAt: isoAt(clock.now()),
      };
      await store.write(async () => {
        await repo.put(c);
        await record(server.workspaceId, actor, 'mcp.credential_set', server.name, { agentId, kind: 'secret' });
      });
      return { holder: { agentId }, kind: 'secret', setBy: c.setBy, setAt: c.setAt };
    },

    async remove(server, holder, kind, actor) {
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

    async removeAllInWrite(wid, server) {
      await repo.removeAll(wid, server);
    },
  };
}
