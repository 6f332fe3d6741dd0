import { createHash, timingSafeEqual } from 'node:crypto';
import { AppError, invalidField } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import { secretHash } from '../lib/secrets.js';
import type { Ledger } from '../ledger/service.js';
import { standingOf } from '../killswitch/standing.js';
import type { AgentRecord, OAuthClientRecord, OAuthConnectionRecord, OAuthTokenRecord, Store } from '../store/index.js';
import { endConnectionsInWrite } from './connections.js';
import { bounded, metrics } from '../lib/metrics.js';
import { ClientMetadataProblem, clientIdUrlProblem, isUrlClientId, type ClientMetadata } from './client-metadata.js';
import { openPair, sealPair } from './grace.js';
import { acceptableRedirect, redirectMatches } from './redirects.js';
import { DEFAULT_SCOPE, SCOPES_SUPPORTED, grantedScope, offline, refreshScopeProblem } from './scopes.js';

/**
 * The OAuth 2.1 authorization server for MCP clients (SPEC.md 2.4, 2.5, 3, 4.5, 5.5).
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
 *   workspace (connections.ts); an ended connection's tokens never work again.
 * - Codes and tokens are stored only as hashes.
 */
export const ACCESS_TTL_SECONDS = 3600;
export const CODE_TTL_MS = 5 * 60_000;
export const REFRESH_TTL_MS = 30 * 86_400_000;
export { SCOPE } from './scopes.js';
export { acceptableRedirect, redirectMatches };
const AUTH_METHODS = ['none', 'client_secret_post', 'client_secret_basic'] as const;
export type AuthMethod = (typeof AUTH_METHODS)[number];

const outcome = <T>(result: T | AppError): T => {
  if (result instanceof AppError) throw result;
  return result;
};

const sameHash = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** A client known by its metadata document's URL, as the token endpoint and the grant see it: public, not stored. */
const urlClient = (clientId: string, clientName: string): OAuthClientRecord => ({
  clientId,
  clientName,
  redirectUris: [],
  authMethod: 'none',
  secretHash: null,
  createdAt: '',
});

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

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token?: string;
  scope: string;
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
}) {
  const { store, clock, ids, ledger } = deps;
  const t = store.tables;
  const resourceUrl = () => `${deps.issuer()}/mcp`;

  const issuePairInWrite = (c: OAuthConnectionRecord, nowMs: number): TokenResponse => {
    const scope = c.scope ?? DEFAULT_SCOPE;
    const access = ids.secret('aat');
    const refresh = offline(scope) ? ids.secret('art') : null;
    const accessHash = secretHash(access);
    const base = {
      connectionId: c.id,
      workspaceId: c.workspaceId,
      agentId: c.agentId,
      clientId: c.clientId,
      usedAt: null,
    };
    t.oauthTokens.put(accessHash, {
      ...base,
      kind: 'access',
      expiresAt: isoAt(nowMs + ACCESS_TTL_SECONDS * 1000),
      pairedAccess: null,
    });
    if (refresh)
      t.oauthTokens.put(secretHash(refresh), {
        ...base,
        kind: 'refresh',
        expiresAt: isoAt(nowMs + REFRESH_TTL_MS),
        pairedAccess: accessHash,
      });
    return {
      access_token: access,
      token_type: 'Bearer',
      expires_in: ACCESS_TTL_SECONDS,
      ...(refresh ? { refresh_token: refresh } : {}),
      scope,
    };
  };

  const connectionOf = (r: { workspaceId: string; connectionId: string }) =>
    t.oauthConnections.get([r.workspaceId, r.connectionId]);

  const endInWrite = (c: OAuthConnectionRecord | undefined, why: string, actor: string): void => {
    if (!c || c.endedAt) return;
    t.oauthConnections.put([c.workspaceId, c.id], { ...c, endedAt: isoAt(clock.now()), endedWhy: why });
    ledger.record({
      workspaceId: c.workspaceId,
      actor,
      kind: 'oauth.connection_ended',
      subject: c.id,
      data: { why, clientId: c.clientId, agentId: c.agentId },
    });
  };

  /** The client, authenticated as it registered (form fields or HTTP Basic). */
  const authenticateClient = (
    form: Record<string, string | undefined>,
    basic: { id: string; secret: string } | null,
  ): OAuthClientRecord => {
    const clientId = basic?.id ?? form.client_id;
    // A URL client is public: its codes and tokens are bound to the URL, so nothing is fetched here.
    const client =
      clientId && isUrlClientId(clientId)
        ? clientIdUrlProblem(clientId) === null
          ? urlClient(clientId, new URL(clientId).host)
          : undefined
        : clientId
          ? t.oauthClients.get(clientId)
          : undefined;
    if (!client) throw new AppError('invalid_client', { message: 'Unknown client.' });
    if (form.client_id !== undefined && basic && form.client_id !== basic.id)
      throw new AppError('invalid_client', { message: 'client_id differs from the one in the Authorization header.' });
    const secret =
      client.authMethod === 'client_secret_basic'
        ? basic?.secret
        : client.authMethod === 'client_secret_post'
          ? form.client_secret
          : undefined;
    if (
      client.authMethod !== 'none' &&
      (secret === undefined || !sameHash(secretHash(secret), client.secretHash ?? ''))
    ) {
      throw new AppError('invalid_client', {
        message: `This client authenticates with ${client.authMethod}.`,
        ...(client.authMethod === 'client_secret_basic'
          ? { headers: { 'www-authenticate': 'Basic realm="svc"' } }
          : {}),
      });
    }
    return client;
  };

  return {
    resourceUrl,
    grantedScope,

    /** RFC 8414 discovery. */
    metadata() {
      const issuer = deps.issuer();
      return {
        issuer,
        authorization_endpoint: `${issuer}/oauth/authorize`,
        token_endpoint: `${issuer}/oauth/token`,
        registration_endpoint: `${issuer}/oauth/register`,
        revocation_endpoint: `${issuer}/oauth/revoke`,
        response_types_supported: ['code'],
        grant_types_supported: ['authorization_code', 'refresh_token'],
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
      await store.write(() => t.oauthClients.put(client.clientId, client));
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
      } else client = clientId ? t.oauthClients.get(clientId) : undefined;
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
    connectable(
      userId: string,
    ): Array<{ workspaceId: string; workspaceName: string; agentId: string; agentName: string }> {
      const out: Array<{ workspaceId: string; workspaceName: string; agentId: string; agentName: string }> = [];
      for (const { key, value: role } of t.userWorkspaces.scan([userId])) {
        const wid = String(key[1]);
        if (role !== 'owner' && role !== 'admin' && role !== 'member') continue;
        const workspace = t.workspaces.get(wid);
        const stopAll = t.stopAll.get(wid);
        for (const { value: a } of t.agents.scan([wid])) {
          if (a.removedAt || (role === 'member' && a.actsFor !== userId) || standingOf(a, stopAll).stopped) continue;
          out.push({ workspaceId: wid, workspaceName: workspace?.name ?? wid, agentId: a.id, agentName: a.name });
        }
      }
      return out;
    },

    /** A person's consent: the connection and its code, in one write. */
    async grant(req: AuthorizeRequest, userId: string, agentId: string): Promise<string> {
      const choice = this.connectable(userId).find((c) => c.agentId === agentId);
      if (!choice)
        throw invalidField('agent', 'you may not connect that agent (it is not yours, is stopped, or was removed)');
      const client = isUrlClientId(req.clientId)
        ? urlClient(req.clientId, req.clientName ?? new URL(req.clientId).host)
        : t.oauthClients.get(req.clientId);
      if (!client) throw new AppError('invalid_client');
      const code = ids.secret('aat').replace(/^aat_/, 'code_');
      await store.write(() => {
        const now = clock.now();
        // Checked again inside the write: a freeze, removal or departure committed a moment
        // earlier must not leave a connection alive that it would have ended.
        const role = t.userWorkspaces.get([userId, choice.workspaceId]);
        const live = t.agents.get([choice.workspaceId, agentId]);
        if (
          !role ||
          !live ||
          live.removedAt ||
          standingOf(live, t.stopAll.get(choice.workspaceId)).stopped ||
          (role === 'member' && live.actsFor !== userId)
        ) {
          throw invalidField(
            'agent',
            'you may no longer connect that agent (it was stopped or removed, or you left the workspace)',
          );
        }
        if (req.nonce !== undefined) {
          if (t.oauthConsentsUsed.has(req.nonce))
            throw new AppError('forbidden', {
              message: 'This consent form was already used.',
              fix: 'Start the connection again from the application.',
            });
          t.oauthConsentsUsed.put(req.nonce, isoAt(req.exp ?? now));
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
        t.oauthConnections.put([connection.workspaceId, connection.id], connection);
        t.oauthCodes.put(secretHash(code), {
          clientId: client.clientId,
          redirectUri: req.redirectUri,
          challenge: req.challenge,
          connectionId: connection.id,
          workspaceId: connection.workspaceId,
          expiresAt: isoAt(now + CODE_TTL_MS),
          usedAt: null,
        });
        ledger.record({
          workspaceId: connection.workspaceId,
          actor: `user:${userId}`,
          kind: 'oauth.connected',
          subject: connection.id,
          data: { clientId: client.clientId, clientName: client.clientName, agentId },
        });
      });
      return code;
    },

    async token(
      form: Record<string, string | undefined>,
      basic: { id: string; secret: string } | null,
    ): Promise<TokenResponse> {
      return countGrant(form.grant_type, async () => {
        const client = authenticateClient(form, basic);
        if (form.resource !== undefined && form.resource !== resourceUrl())
          throw new AppError('invalid_target', { message: `resource must be ${resourceUrl()}.` });
        if (form.grant_type === 'authorization_code') {
          if (!form.code || !form.code_verifier || !form.redirect_uri)
            throw invalidField(null, 'code, code_verifier and redirect_uri are required');
          if (!/^[A-Za-z0-9._~-]{43,128}$/.test(form.code_verifier))
            throw invalidField('code_verifier', 'code_verifier must be 43 to 128 unreserved characters');
          const codeHash = secretHash(form.code);
          // What a failed exchange changes (the code spent, a replayed code's connection ended)
          // must commit, so refusals are returned from the write and thrown after it.
          return outcome(
            await store.write((): TokenResponse | AppError => {
              const now = clock.now();
              const code = t.oauthCodes.get(codeHash);
              if (!code || code.clientId !== client.clientId)
                return new AppError('invalid_grant', { message: 'Unknown code, or a code issued to another client.' });
              const connection = connectionOf(code);
              if (code.usedAt) {
                // A replayed code: whoever holds it, the tokens it minted stop now (RFC 6749 4.1.2).
                endInWrite(connection, 'authorization code replayed', 'system');
                return new AppError('invalid_grant', {
                  message: 'This code was already used; the connection it made is ended.',
                });
              }
              t.oauthCodes.put(codeHash, { ...code, usedAt: isoAt(now) });
              if (Date.parse(code.expiresAt) <= now)
                return new AppError('invalid_grant', { message: 'The code expired.' });
              if (code.redirectUri !== form.redirect_uri)
                return new AppError('invalid_grant', {
                  message: 'redirect_uri differs from the one the code was issued for.',
                });
              const challenge = createHash('sha256').update(form.code_verifier!).digest('base64url');
              if (!sameHash(challenge, code.challenge))
                return new AppError('invalid_grant', {
                  message: 'The code_verifier does not match the code_challenge.',
                });
              if (!connection || connection.endedAt)
                return new AppError('invalid_grant', {
                  message: 'The connection has ended (the agent was stopped or removed, or the person left).',
                });
              return issuePairInWrite(connection, now);
            }),
          );
        }
        if (form.grant_type === 'refresh_token') {
          if (!form.refresh_token) throw invalidField('refresh_token', 'refresh_token is required');
          const tokenHash = secretHash(form.refresh_token);
          return outcome(
            await store.write((): TokenResponse | AppError => {
              const now = clock.now();
              const token = t.oauthTokens.get(tokenHash);
              if (!token || token.kind !== 'refresh' || token.clientId !== client.clientId)
                return new AppError('invalid_grant', {
                  message: 'Unknown refresh token, or one issued to another client.',
                });
              const connection = connectionOf(token);
              if (token.usedAt) {
                // Within the window, the same client (checked above) gets the pair the first use issued.
                if (token.grace && Date.parse(token.grace.until) > now && connection && !connection.endedAt) {
                  const pair = openPair<TokenResponse>(
                    deps.graceKey,
                    token.grace.sealed,
                    form.refresh_token!,
                    tokenHash,
                  );
                  if (pair) {
                    const elapsed = Math.floor((now - Date.parse(token.usedAt)) / 1000);
                    return { ...pair, expires_in: Math.max(0, pair.expires_in - elapsed) };
                  }
                }
                endInWrite(connection, 'refresh token reused', 'system');
                return new AppError('invalid_grant', {
                  message: 'This refresh token was already used: the whole connection is ended. Authorize again.',
                });
              }
              if (!connection || connection.endedAt)
                return new AppError('invalid_grant', { message: 'The connection has ended; authorize again.' });
              if (token.expiresAt && Date.parse(token.expiresAt) <= now)
                return new AppError('invalid_grant', { message: 'The refresh token expired; authorize again.' });
              const beyond = refreshScopeProblem(connection.scope ?? DEFAULT_SCOPE, form.scope);
              if (beyond) return new AppError('invalid_scope', { message: `${beyond}.` });
              if (token.pairedAccess) t.oauthTokens.remove(token.pairedAccess);
              const pair = issuePairInWrite(connection, now);
              t.oauthTokens.put(tokenHash, {
                ...token,
                usedAt: isoAt(now),
                grace:
                  deps.refreshGraceMs > 0
                    ? {
                        until: isoAt(now + deps.refreshGraceMs),
                        sealed: sealPair(deps.graceKey, pair, form.refresh_token!, tokenHash),
                      }
                    : null,
              });
              return pair;
            }),
          );
        }
        throw new AppError('unsupported_grant_type', {
          message: `grant_type must be authorization_code or refresh_token${form.grant_type ? `, not ${form.grant_type}` : ''}.`,
        });
      });
    },

    /** RFC 7009: ends the token's connection when it is this client's; 200 {} whatever it was. */
    async revoke(
      form: Record<string, string | undefined>,
      basic: { id: string; secret: string } | null,
    ): Promise<void> {
      const client = authenticateClient(form, basic);
      if (!form.token) return;
      const tokenHash = secretHash(form.token);
      await store.write(() => {
        const token = t.oauthTokens.get(tokenHash);
        if (!token || token.clientId !== client.clientId) return;
        endInWrite(connectionOf(token), 'revoked by the client', `oauth:${client.clientId}`);
      });
    },

    /** An access token as the agent it stands for, or undefined (unknown, expired, or its connection ended). */
    resolveAccess(value: string): { workspaceId: string; agent: AgentRecord; connectionId: string } | undefined {
      const token: OAuthTokenRecord | undefined = t.oauthTokens.get(secretHash(value));
      if (!token || token.kind !== 'access' || !token.expiresAt || Date.parse(token.expiresAt) <= clock.now())
        return undefined;
      const connection = connectionOf(token);
      if (!connection || connection.endedAt) return undefined;
      const agent = t.agents.get([token.workspaceId, token.agentId]);
      if (!agent || agent.removedAt) return undefined;
      return { workspaceId: token.workspaceId, agent, connectionId: connection.id };
    },

    /** A workspace's connections: everyone's for owners and admins, their own for others. */
    connections(wid: string, userId: string, all: boolean): OAuthConnectionRecord[] {
      return t.oauthConnections
        .scan([wid])
        .map((e) => e.value)
        .filter((c) => all || c.userId === userId);
    },

    async endConnection(wid: string, cnxId: string, userId: string, all: boolean): Promise<OAuthConnectionRecord> {
      return store.write(() => {
        const c = t.oauthConnections.get([wid, cnxId]);
        if (!c || (!all && c.userId !== userId))
          throw new AppError('not_found', { message: 'No such connection of yours in this workspace.' });
        endInWrite(c, 'ended in the console', `user:${userId}`);
        return t.oauthConnections.get([wid, cnxId])!;
      });
    },

    endAllInWrite: endConnectionsInWrite,
  };
}

export type OAuth = ReturnType<typeof createOAuth>;

/** Token requests counted by grant type and outcome (the OAuth error code: a closed set). */
async function countGrant(
  grantType: string | undefined,
  exchange: () => Promise<TokenResponse>,
): Promise<TokenResponse> {
  const grant = grantType === 'authorization_code' || grantType === 'refresh_token' ? grantType : 'other';
  try {
    const tokens = await exchange();
    metrics.oauthGrants.inc({ grant_type: grant, outcome: 'issued' });
    return tokens;
  } catch (err) {
    metrics.oauthGrants.inc({ grant_type: grant, outcome: err instanceof AppError ? bounded(err.type) : 'error' });
    throw err;
  }
}
