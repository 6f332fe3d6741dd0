import { AppError, invalidField } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import { secretHash } from '../lib/secrets.js';
import type { Ledger } from '../ledger/service.js';
import { standingOf } from '../agents/standing.js';
import type { Store } from '../store/index.js';
import type { AgentRecord } from '../agents/records.js';
import type { OAuthClientRecord, OAuthConnectionRecord, OAuthTokenRecord } from './records.js';
import { oauthRepo } from './repo.js';
import { ClientMetadataProblem, isRegisteredClientId, isUrlClientId, type ClientMetadata } from './client-metadata.js';
import { acceptableRedirect, redirectMatches } from './redirects.js';
import { DEFAULT_SCOPE, SCOPES_SUPPORTED, grantedScope } from './scopes.js';
import { AUTH_METHODS, createTokenEndpoint, urlClient, type AuthMethod } from './token.js';
import { CLI_CLIENT_ID, DEVICE_GRANT, createDeviceGrant } from './device/service.js';

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
 *   workspace (repo.ts endConnections, through the principal-ended hooks); an ended connection's tokens never work again.
 * - Codes and tokens are stored only as hashes.
 */
export const CODE_TTL_MS = 5 * 60_000;
export { SCOPE } from './scopes.js';
export { ACCESS_TTL_SECONDS, REFRESH_TTL_MS, type AuthMethod, type TokenResponse } from './token.js';
export { acceptableRedirect, redirectMatches };

export interface AuthorizeRequest {
  clientId: string;
  redirectUri: string;
  challenge: string;
  state: string | null;
  resource: string;
  /** The granted scope (scopes.ts). */
  scope: string;
  /** A URL client's name, from its metadata document when the consent page was shown. */
  clientName?: string;
  /** The consent form's own id: a form connects once. */
  nonce?: string;
  /** When the consent form expires (ms). */
  exp?: number;
}

/** A client as the authorization endpoint sees it: registered, or described by its metadata document (`host` set). */
export interface AuthorizingClient {
  clientId: string;
  clientName: string;
  redirectUris: string[];
  host?: string;
}

export function createOAuth(deps: {
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
}) {
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
    /** `svc login`'s device authorization grant and the person-bound tokens it issues (device/service.ts). */
    device,
    /** The scope the /mcp challenge names: the access, and a refresh token to stay connected. */
    challengeScope: DEFAULT_SCOPE,

    /** RFC 8414 discovery. */
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

    async register(input: {
      client_name?: unknown;
      redirect_uris?: unknown;
      token_endpoint_auth_method?: unknown;
      grant_types?: unknown;
      response_types?: unknown;
    }) {
      const uris = input.redirect_uris;
      if (!Array.isArray(uris) || uris.length === 0 || uris.some((u) => typeof u !== 'string')) {
        throw new AppError('invalid_redirect_uri', { message: 'redirect_uris must be a non-empty array of URLs.' });
      }
      const bad = (uris as string[]).find((u) => !acceptableRedirect(u));
      if (bad !== undefined)
        throw new AppError('invalid_redirect_uri', {
          message: `${bad} is neither https nor http on a loopback address (or it has a fragment).`,
        });
      const method = input.token_endpoint_auth_method ?? 'none';
      if (typeof method !== 'string' || !(AUTH_METHODS as readonly string[]).includes(method)) {
        throw new AppError('invalid_client_metadata', {
          message: `token_endpoint_auth_method must be one of ${AUTH_METHODS.join(', ')}.`,
        });
      }
      if (
        input.client_name !== undefined &&
        (typeof input.client_name !== 'string' || input.client_name.length > 200)
      ) {
        throw new AppError('invalid_client_metadata', {
          message: 'client_name must be a string of at most 200 characters.',
        });
      }
      for (const [field, allowed] of [
        ['grant_types', ['authorization_code', 'refresh_token']],
        ['response_types', ['code']],
      ] as const) {
        const v = input[field];
        if (v !== undefined && (!Array.isArray(v) || v.some((x) => !(allowed as readonly string[]).includes(x)))) {
          throw new AppError('invalid_client_metadata', { message: `${field} may hold only ${allowed.join(', ')}.` });
        }
      }
      const secret = method === 'none' ? null : ids.secret('mcs');
      const client: OAuthClientRecord = {
        clientId: ids.secret('mcp'),
        clientName: typeof input.client_name === 'string' ? input.client_name : 'MCP client',
        redirectUris: uris as string[],
        authMethod: method as AuthMethod,
        secretHash: secret ? secretHash(secret) : null,
        createdAt: isoAt(clock.now()),
      };
      await store.write(() => repo.putClient(client));
      return {
        client_id: client.clientId,
        ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
        client_id_issued_at: Math.floor(Date.parse(client.createdAt) / 1000),
        client_name: client.clientName,
        redirect_uris: client.redirectUris,
        token_endpoint_auth_method: client.authMethod,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      };
    },

    /**
     * The client and the redirect to use, or the problem to show on an error page (never a
     * redirect). A URL client_id is resolved through its metadata document (fetched or cached).
     */
    async clientAndRedirect(
      clientId: string | undefined,
      redirectUri: string | undefined,
    ): Promise<{ client: AuthorizingClient; redirectUri: string } | { problem: string }> {
      let client: AuthorizingClient | undefined;
      if (clientId && isUrlClientId(clientId)) {
        try {
          client = await deps.clientMetadata.resolve(clientId);
        } catch (err) {
          if (err instanceof ClientMetadataProblem)
            return { problem: `This application's client_id cannot be used: ${err.message}` };
          throw err;
        }
      } else client = clientId && isRegisteredClientId(clientId) ? await repo.getClient(clientId) : undefined;
      if (!client) return { problem: 'This application is not registered here (unknown client_id).' };
      if (redirectUri === undefined) {
        if (client.redirectUris.length === 1) return { client, redirectUri: client.redirectUris[0]! };
        return { problem: 'The application did not say where to send you back (redirect_uri).' };
      }
      if (!client.redirectUris.some((r) => redirectMatches(r, redirectUri)))
        return {
          problem: client.host
            ? `The address to send you back to is not one of those in the application's metadata document (${client.host}).`
            : 'The address to send you back to is not one this application registered.',
        };
      return { client, redirectUri };
    },

    /** The agents a person may connect: every agent of workspaces they own or administer; as a member, the agents that act for them. */
    async connectable(
      userId: string,
    ): Promise<Array<{ workspaceId: string; workspaceName: string; agentId: string; agentName: string }>> {
      const memberships = (await repo.membershipsOf(userId)).filter(
        ({ role }) => role === 'owner' || role === 'admin' || role === 'member',
      );
      const perWorkspace = await Promise.all(
        memberships.map(async ({ workspaceId: wid, role }) => {
          const [workspace, stopAll, agents] = await Promise.all([
            repo.getWorkspace(wid),
            repo.stopAllOf(wid),
            repo.agentsOf(wid),
          ]);
          return agents
            .filter(
              (a) => !a.removedAt && !(role === 'member' && a.actsFor !== userId) && !standingOf(a, stopAll).stopped,
            )
            .map((a) => ({
              workspaceId: wid,
              workspaceName: workspace?.name ?? wid,
              agentId: a.id,
              agentName: a.name,
            }));
        }),
      );
      return perWorkspace.flat();
    },

    /** A person's consent: the connection and its code, in one write. */
    async grant(req: AuthorizeRequest, userId: string, agentId: string): Promise<string> {
      const choice = (await this.connectable(userId)).find((c) => c.agentId === agentId);
      if (!choice)
        throw invalidField('agent', 'you may not connect that agent (it is not yours, is stopped, or was removed)');
      const client = isUrlClientId(req.clientId)
        ? urlClient(req.clientId, req.clientName ?? new URL(req.clientId).host)
        : await repo.getClient(req.clientId);
      if (!client) throw new AppError('invalid_client');
      const code = ids.secret('aat').replace(/^aat_/, 'code_');
      await store.write(async () => {
        const now = clock.now();
        // Checked again inside the write: a freeze, removal or departure committed a moment
        // earlier must not leave a connection alive that it would have ended.
        // One read after another: a write's reads share one connection.
        const role = await repo.roleIn(userId, choice.workspaceId);
        const live = await repo.getAgent(choice.workspaceId, agentId);
        if (
          !role ||
          !live ||
          live.removedAt ||
          standingOf(live, await repo.stopAllOf(choice.workspaceId)).stopped ||
          (role === 'member' && live.actsFor !== userId)
        ) {
          throw invalidField(
            'agent',
            'you may no longer connect that agent (it was stopped or removed, or you left the workspace)',
          );
        }
        if (req.nonce !== undefined) {
          if (await repo.consentUsed(req.nonce))
            throw new AppError('forbidden', {
              message: 'This consent form was already used.',
              fix: 'Start the connection again from the application.',
            });
          await repo.useConsent(req.nonce, isoAt(req.exp ?? now));
        }
        const connection: OAuthConnectionRecord = {
          id: ids.id('cnx'),
          workspaceId: choice.workspaceId,
          clientId: client.clientId,
          clientName: client.clientName,
          agentId,
          userId,
          scope: req.scope,
          createdAt: isoAt(now),
          endedAt: null,
          endedWhy: null,
        };
        await repo.putConnection(connection);
        await repo.putCode(secretHash(code), {
          clientId: client.clientId,
          redirectUri: req.redirectUri,
          challenge: req.challenge,
          connectionId: connection.id,
          workspaceId: connection.workspaceId,
          expiresAt: isoAt(now + CODE_TTL_MS),
          usedAt: null,
        });
        await ledger.record({
          workspaceId: connection.workspaceId,
          actor: `user:${userId}`,
          kind: 'oauth.connected',
          subject: connection.id,
          data: { clientId: client.clientId, clientName: client.clientName, agentId, scope: req.scope },
        });
      });
      return code;
    },

    /** The token endpoint (token.ts); the device grant and a person's refresh tokens go to device/service.ts. */
    token(form: Record<string, string | undefined>, basic: { id: string; secret: string } | null) {
      if (form.grant_type === DEVICE_GRANT) return device.deviceToken(form);
      if (form.grant_type === 'refresh_token' && form.refresh_token?.startsWith('prt_')) return device.refresh(form);
      return endpoint.token(form, basic);
    },
    /** RFC 7009 revocation (token.ts; the command line's client: device/service.ts). */
    revoke(form: Record<string, string | undefined>, basic: { id: string; secret: string } | null) {
      if (!basic && form.client_id === CLI_CLIENT_ID) return device.revoke(form);
      return endpoint.revoke(form, basic);
    },

    /** An access token as the agent it stands for, or undefined (unknown, expired, or its connection ended). */
    async resolveAccess(
      value: string,
    ): Promise<{ workspaceId: string; agent: AgentRecord; connectionId: string } | undefined> {
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

    /** A workspace's connections: everyone's for owners and admins, their own for others. */
    async connections(wid: string, userId: string, all: boolean): Promise<OAuthConnectionRecord[]> {
      return (await repo.listConnections(wid)).filter((c) => all || c.userId === userId);
    },

    async endConnection(wid: string, cnxId: string, userId: string, all: boolean): Promise<OAuthConnectionRecord> {
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

export type OAuth = ReturnType<typeof createOAuth>;
