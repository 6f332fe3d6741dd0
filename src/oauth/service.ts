import { AppError } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import { secretHash } from '../lib/secrets.js';
import type { Ledger } from '../ledger/service.js';
import type { Store } from '../store/index.js';
import type { AgentRecord } from '../agents/records.js';
import type { OAuthConnectionRecord, OAuthTokenRecord } from './records.js';
import { oauthRepo } from './repo.js';
import type { ClientMetadata } from './client-metadata.js';
import { acceptableRedirect, redirectMatches } from './redirects.js';
import { DEFAULT_SCOPE, SCOPES_SUPPORTED, grantedScope } from './scopes.js';
import { AUTH_METHODS, createTokenEndpoint, type TokenResponse } from './token.js';
import { CLI_CLIENT_ID, DEVICE_GRANT, createDeviceGrant, type DeviceGrant } from './device/service.js';
import { registerClient, type ClientRegistration, type RegistrationInput } from './register.js';
import {
  clientAndRedirect,
  connectable,
  grantConnection,
  type AuthorizeRequest,
  type AuthorizingClient,
  type ConnectableAgent,
} from './authorization.js';

/**
 * The OAuth 2.1 authorization server for MCP clients (docs/mcp-oauth.md#oauth-for-mcp-clients).
 * Rules:
 * - Clients register themselves (RFC 7591): redirect URIs https, or http on a loopback address;
 *   `none` (public, the default), `client_secret_post` or `client_secret_basic` (a secret is
 *   returned once and stored as a hash). Or a client's `client_id` is the https URL of its
 *   metadata document (client-metadata.ts): a public client, never stored, its redirect URIs
 *   from the document only.
 * - Authorization needs PKCE S256, a registered redirect URI (exact, except the port of a
 *   loopback one, RFC 8252 7.3), and `resource` equal to this deployment's /mcp URL (RFC 8707).
 *   A signed-in person connects exactly one agent they may manage: the connection.
 * - Codes last CODE_TTL_MS and are used once; a code presented again ends the connection it made.
 * - Scopes as scopes.ts says: `svc:agent` always, a refresh token only with `offline_access`.
 * - Access tokens (`aat_`) last an hour and work at /mcp exactly as the agent's key. Refresh
 *   tokens (`art_`) are used once: each refresh issues a new pair and stops the old access token.
 *   The same client presenting a used refresh token again within `refreshGraceMs` of its use gets
 *   the same new pair (grace.ts); later, the reuse ends the whole connection.
 * - Revoking either token ends its connection (RFC 7009: 200 {} whatever the token was).
 * - A connection also ends when its agent is frozen or removed, or its person leaves the
 *   workspace (repo.ts endConnections, through the principal-ended hooks); an ended connection's
 *   tokens never work again.
 * - Codes and tokens are stored only as hashes.
 *
 * The operations, one file each: registration (register.ts), the authorization endpoint's client,
 * agents and consent (authorization.ts), the token and revocation endpoints (token.ts), `svc login`
 * (device/service.ts).
 */
export { SCOPE } from './scopes.js';
export { ACCESS_TTL_SECONDS, REFRESH_TTL_MS, type AuthMethod, type TokenResponse } from './token.js';
export { CODE_TTL_MS, type AuthorizeRequest, type AuthorizingClient, type ConnectableAgent } from './authorization.js';
export type { ClientRegistration, RegistrationInput } from './register.js';
export { acceptableRedirect, redirectMatches };

/** RFC 8414 authorization server metadata, as GET /.well-known/oauth-authorization-server answers it. */
export interface AuthorizationServerMetadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  registration_endpoint: string;
  revocation_endpoint: string;
  device_authorization_endpoint: string;
  response_types_supported: string[];
  grant_types_supported: string[];
  code_challenge_methods_supported: string[];
  token_endpoint_auth_methods_supported: string[];
  revocation_endpoint_auth_methods_supported: string[];
  scopes_supported: string[];
  authorization_response_iss_parameter_supported: boolean;
  client_id_metadata_document_supported: boolean;
}

/** A client's credentials from an HTTP Basic header, when it sent one. */
export type BasicCredentials = { id: string; secret: string } | null;

/**
 * The OAuth 2.1 authorization server for MCP clients and the command line. It reads and writes
 * the OAuth tables (`oauthClients`, `oauthConnections`, `oauthCodes`, `oauthTokens`,
 * `oauthConsentsUsed`) through repo.ts and the device grant's through device/repo.ts; it reads
 * memberships, workspaces, agents and the workspace's stop; it records connections made and ended
 * in the ledger.
 */
export interface OAuth {
  /** This deployment's /mcp URL: the one `resource` every request must name (RFC 8707). */
  resourceUrl(): string;
  /** The scope a request's `scope` is granted, or the problem with it (scopes.ts). */
  grantedScope: typeof grantedScope;
  /** `svc login`'s device authorization grant and the person-bound tokens it issues (device/service.ts). */
  device: DeviceGrant;
  /** The scope the /mcp challenge names: the access, and a refresh token to stay connected. */
  challengeScope: string;
  /** RFC 8414 discovery. */
  metadata(): AuthorizationServerMetadata;
  /** RFC 7591 registration (register.ts): writes the client; its secret is answered once. */
  register(input: RegistrationInput): Promise<ClientRegistration>;
  /**
   * The client and the redirect to use, or the problem to show on an error page (never a
   * redirect). A URL client_id is resolved through its metadata document (fetched or cached).
   */
  clientAndRedirect(
    clientId: string | undefined,
    redirectUri: string | undefined,
  ): Promise<{ client: AuthorizingClient; redirectUri: string } | { problem: string }>;
  /** The agents a person may connect: every agent of workspaces they own or administer; as a member, the agents that act for them. */
  connectable(userId: string): Promise<ConnectableAgent[]>;
  /** A person's consent: the connection and its code, in one write; answers the code. */
  grant(req: AuthorizeRequest, userId: string, agentId: string): Promise<string>;
  /** The token endpoint (token.ts); the device grant and a person's refresh tokens go to device/service.ts. */
  token(form: Record<string, string | undefined>, basic: BasicCredentials): Promise<TokenResponse>;
  /** RFC 7009 revocation (token.ts; the command line's client: device/service.ts). */
  revoke(form: Record<string, string | undefined>, basic: BasicCredentials): Promise<void>;
  /** An access token as the agent it stands for, or undefined (unknown, expired, or its connection ended). */
  resolveAccess(value: string): Promise<{ workspaceId: string; agent: AgentRecord; connectionId: string } | undefined>;
  /** A workspace's connections: everyone's for owners and admins (`all`), their own for others. */
  connections(wid: string, userId: string, all: boolean): Promise<OAuthConnectionRecord[]>;
  /** Ends one connection (someone else's only with `all`), recorded in the ledger; answers it ended. */
  endConnection(wid: string, cnxId: string, userId: string, all: boolean): Promise<OAuthConnectionRecord>;
}

export interface OAuthDeps {
  store: Store;
  clock: Clock;
  ids: IdSource;
  ledger: Ledger;
  issuer: () => string;
  clientMetadata: ClientMetadata;
  /** How long a used refresh token still gets the pair its use issued (0: never). */
  refreshGraceMs: number;
  /** The deployment's key for sealing that pair (grace.ts). */
  graceKey: Buffer;
  /** `svc login` (device/service.ts): the device code's lifetime and polling interval, and the person's tokens' lifetimes. */
  device?: {
    deviceCodeTtlSeconds: number;
    pollIntervalSeconds: number;
    accessTtlSeconds: number;
    refreshTtlDays: number;
  };
}

export function createOAuth(deps: OAuthDeps): OAuth {
  const { store, clock, ids, ledger } = deps;
  const repo = oauthRepo(store);
  const resourceUrl = () => `${deps.issuer()}/mcp`;

  const connectionOf = (r: { workspaceId: string; connectionId: string }) =>
    repo.getConnection(r.workspaceId, r.connectionId);

  const endInWrite = async (c: OAuthConnectionRecord | undefined, why: string, actor: string): Promise<void> => {
    if (!c || c.endedAt) return;
    await repo.putConnection({ ...c, endedAt: isoAt(clock.now()), endedWhy: why });
    await ledger.record({
      workspaceId: c.workspaceId,
      actor,
      kind: 'oauth.connection_ended',
      subject: c.id,
      data: { why, clientId: c.clientId, agentId: c.agentId },
    });
  };

  const endpoint = createTokenEndpoint({
    store,
    repo,
    clock,
    ids,
    resourceUrl,
    refreshGraceMs: deps.refreshGraceMs,
    graceKey: deps.graceKey,
    connectionOf,
    endInWrite,
  });

  const device = createDeviceGrant({
    store,
    clock,
    ids,
    ledger,
    issuer: deps.issuer,
    deviceCodeTtlSeconds: deps.device?.deviceCodeTtlSeconds ?? 600,
    pollIntervalSeconds: deps.device?.pollIntervalSeconds ?? 5,
    accessTtlSeconds: deps.device?.accessTtlSeconds ?? 3600,
    refreshTtlDays: deps.device?.refreshTtlDays ?? 30,
    refreshGraceMs: deps.refreshGraceMs,
    graceKey: deps.graceKey,
  });

  return {
    resourceUrl,
    grantedScope,
    device,
    challengeScope: DEFAULT_SCOPE,

    metadata() {
      const issuer = deps.issuer();
      return {
        issuer,
        authorization_endpoint: `${issuer}/oauth/authorize`,
        token_endpoint: `${issuer}/oauth/token`,
        registration_endpoint: `${issuer}/oauth/register`,
        revocation_endpoint: `${issuer}/oauth/revoke`,
        device_authorization_endpoint: `${issuer}/oauth/device_authorization`,
        response_types_supported: ['code'],
        grant_types_supported: ['authorization_code', 'refresh_token', DEVICE_GRANT],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: [...AUTH_METHODS],
        revocation_endpoint_auth_methods_supported: [...AUTH_METHODS],
        scopes_supported: [...SCOPES_SUPPORTED],
        authorization_response_iss_parameter_supported: true,
        client_id_metadata_document_supported: true,
      };
    },

    register: (input) => registerClient({ store, repo, clock, ids }, input),
    clientAndRedirect: (clientId, redirectUri) =>
      clientAndRedirect({ repo, clientMetadata: deps.clientMetadata }, clientId, redirectUri),
    connectable: (userId) => connectable(repo, userId),
    grant: (req, userId, agentId) => grantConnection({ store, repo, clock, ids, ledger }, req, userId, agentId),

    token(form, basic) {
      if (form.grant_type === DEVICE_GRANT) return device.deviceToken(form);
      if (form.grant_type === 'refresh_token' && form.refresh_token?.startsWith('prt_')) return device.refresh(form);
      return endpoint.token(form, basic);
    },
    revoke(form, basic) {
      if (!basic && form.client_id === CLI_CLIENT_ID) return device.revoke(form);
      return endpoint.revoke(form, basic);
    },

    async resolveAccess(value) {
      const token: OAuthTokenRecord | undefined = await repo.getToken(secretHash(value));
      if (!token || token.kind !== 'access' || !token.expiresAt || Date.parse(token.expiresAt) <= clock.now())
        return undefined;
      // Every request at /mcp comes here: the connection and the agent are read together.
      const [connection, agent] = await Promise.all([
        connectionOf(token),
        repo.getAgent(token.workspaceId, token.agentId),
      ]);
      if (!connection || connection.endedAt) return undefined;
      if (!agent || agent.removedAt) return undefined;
      return { workspaceId: token.workspaceId, agent, connectionId: connection.id };
    },

    async connections(wid, userId, all) {
      return (await repo.listConnections(wid)).filter((c) => all || c.userId === userId);
    },

    async endConnection(wid, cnxId, userId, all) {
      return store.write(async () => {
        const c = await repo.getConnection(wid, cnxId);
        if (!c || (!all && c.userId !== userId))
          throw new AppError('not_found', { message: 'No such connection of yours in this workspace.' });
        await endInWrite(c, 'ended in the console', `user:${userId}`);
        return (await repo.getConnection(wid, cnxId))!;
      });
    },
  };
}
