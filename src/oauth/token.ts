import { createHash, timingSafeEqual } from 'node:crypto';
import { AppError, invalidField } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import { bounded, metrics } from '../lib/metrics.js';
import { secretHash } from '../lib/secrets.js';
import type { Store } from '../store/index.js';
import type { OAuthClientRecord, OAuthConnectionRecord } from './records.js';
import { clientIdUrlProblem, isRegisteredClientId, isUrlClientId, MAX_URL } from './client-metadata.js';
import { openPair, sealPair } from './grace.js';
import type { OAuthRepo } from './repo.js';
import { DEFAULT_SCOPE, offline, refreshScopeProblem } from './scopes.js';

/**
 * The token and revocation endpoints (RFC 6749 4.1.3 and 6, RFC 7009; docs/mcp-oauth.md#oauth-for-mcp-clients).
 * Rules:
 * - The client authenticates as it registered (form fields or HTTP Basic); a URL client
 *   (client-metadata.ts) is public, and nothing is fetched here: its codes and tokens are bound
 *   to the URL.
 * - A code is exchanged once, by its client, before it expires, with the redirect URI and the
 *   PKCE verifier it was issued for; a code presented again ends the connection it made.
 * - Access tokens (`aat_`) last ACCESS_TTL_SECONDS. A refresh token (`art_`) comes only with
 *   `offline_access` (scopes.ts) and is used once: each refresh issues a new pair and stops the
 *   old access token. The same client presenting a used refresh token again within
 *   `refreshGraceMs` of its use gets the same new pair (grace.ts); later, the reuse ends the
 *   whole connection. A refresh token presented by another client than its own (used or not,
 *   within the window or after it) ends the whole connection too.
 * - What a failed exchange changes (a code spent, a replayed code's or reused token's connection
 *   ended) commits: refusals are returned from the write and thrown after it.
 */
export const ACCESS_TTL_SECONDS = 3600;
export const REFRESH_TTL_MS = 30 * 86_400_000;
export const AUTH_METHODS = ['none', 'client_secret_post', 'client_secret_basic'] as const;
export type AuthMethod = (typeof AUTH_METHODS)[number];

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token?: string;
  scope: string;
}

const outcome = <T>(result: T | AppError): T => {
  if (result instanceof AppError) throw result;
  return result;
};

const sameHash = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** A client known by its metadata document's URL, as the token endpoint and the grant see it: public, not stored. */
export const urlClient = (clientId: string, clientName: string): OAuthClientRecord => ({
  clientId,
  clientName,
  redirectUris: [],
  authMethod: 'none',
  secretHash: null,
  createdAt: '',
});

export function createTokenEndpoint(deps: {
  store: Store;
  repo: OAuthRepo;
  clock: Clock;
  ids: IdSource;
  resourceUrl: () => string;
  refreshGraceMs: number;
  graceKey: Buffer;
  connectionOf: (r: { workspaceId: string; connectionId: string }) => Promise<OAuthConnectionRecord | undefined>;
  endInWrite: (c: OAuthConnectionRecord | undefined, why: string, actor: string) => Promise<void>;
}) {
  const { store, repo, clock, ids, resourceUrl, connectionOf, endInWrite } = deps;

  const issuePairInWrite = async (c: OAuthConnectionRecord, nowMs: number): Promise<TokenResponse> => {
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
    await repo.putToken(accessHash, {
      ...base,
      kind: 'access',
      expiresAt: isoAt(nowMs + ACCESS_TTL_SECONDS * 1000),
      pairedAccess: null,
    });
    if (refresh)
      await repo.putToken(secretHash(refresh), {
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

  /** The client, authenticated as it registered (form fields or HTTP Basic). */
  const authenticateClient = async (
    form: Record<string, string | undefined>,
    basic: { id: string; secret: string } | null,
  ): Promise<OAuthClientRecord> => {
    const clientId = basic?.id ?? form.client_id;
    // No client_id is longer than a URL one may be: refused as a malformed request, before any lookup.
    if (clientId !== undefined && clientId.length > MAX_URL)
      throw invalidField(basic ? null : 'client_id', `client_id is longer than ${MAX_URL} characters`);
    // A URL client is public: its codes and tokens are bound to the URL, so nothing is fetched here.
    const client =
      clientId && isUrlClientId(clientId)
        ? clientIdUrlProblem(clientId) === null
          ? urlClient(clientId, new URL(clientId).host)
          : undefined
        : clientId && isRegisteredClientId(clientId)
          ? await repo.getClient(clientId)
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
    async token(
      form: Record<string, string | undefined>,
      basic: { id: string; secret: string } | null,
    ): Promise<TokenResponse> {
      return countGrant(form.grant_type, async () => {
        const client = await authenticateClient(form, basic);
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
            await store.write(async (): Promise<TokenResponse | AppError> => {
              // The code is read, checked and spent in this one write: two exchanges racing with
              // one code conflict, and the one retried sees the code used.
              const now = clock.now();
              const code = await repo.getCode(codeHash);
              if (!code || code.clientId !== client.clientId)
                return new AppError('invalid_grant', { message: 'Unknown code, or a code issued to another client.' });
              const connection = await connectionOf(code);
              if (code.usedAt) {
                // A replayed code: whoever holds it, the tokens it minted stop now (RFC 6749 4.1.2).
                await endInWrite(connection, 'authorization code replayed', 'system');
                return new AppError('invalid_grant', {
                  message: 'This code was already used; the connection it made is ended.',
                });
              }
              await repo.putCode(codeHash, { ...code, usedAt: isoAt(now) });
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
            await store.write(async (): Promise<TokenResponse | AppError> => {
              // Read, checked and used in this one write, like a code: of two refreshes racing,
              // the one retried sees the token used (and gets the grace pair, or ends the connection).
              const now = clock.now();
              const token = await repo.getToken(tokenHash);
              if (!token || token.kind !== 'refresh')
                return new AppError('invalid_grant', { message: 'Unknown refresh token.' });
              const connection = await connectionOf(token);
              // Another client holding this client's refresh token holds a stolen one, used or not,
              // within the grace window or after it: the whole connection ends.
              if (token.clientId !== client.clientId) {
                await endInWrite(connection, 'refresh token presented by another client', 'system');
                return new AppError('invalid_grant', {
                  message: 'This refresh token was issued to another client: its connection is ended.',
                });
              }
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
                await endInWrite(connection, 'refresh token reused', 'system');
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
              if (token.pairedAccess) await repo.removeToken(token.pairedAccess);
              const pair = await issuePairInWrite(connection, now);
              // sealPair draws a random IV: run again on a retry, it seals that attempt's pair
              // afresh; only the committed attempt's pair and seal are stored, and nothing leaves.
              await repo.putToken(tokenHash, {
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
          message: `grant_type must be authorization_code, refresh_token or urn:ietf:params:oauth:grant-type:device_code${form.grant_type ? `, not ${form.grant_type}` : ''}.`,
        });
      });
    },

    /** RFC 7009: ends the token's connection when it is this client's; 200 {} whatever it was. */
    async revoke(
      form: Record<string, string | undefined>,
      basic: { id: string; secret: string } | null,
    ): Promise<void> {
      const client = await authenticateClient(form, basic);
      if (!form.token) return;
      const tokenHash = secretHash(form.token);
      await store.write(async () => {
        const token = await repo.getToken(tokenHash);
        if (!token || token.clientId !== client.clientId) return;
        await endInWrite(await connectionOf(token), 'revoked by the client', `oauth:${client.clientId}`);
      });
    },
  };
}

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
