import { AppError } from '../errors/app-error.js';
import type { Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import { bounded, metrics } from '../lib/metrics.js';
import { secretHash } from '../lib/secrets.js';
import type { Store } from '../store/index.js';
import type { OAuthConnectionRecord } from './records.js';
import { authenticateClient } from './client-auth.js';
import { exchangeCode } from './code-grant.js';
import { refreshGrant } from './refresh-grant.js';
import type { OAuthRepo } from './repo.js';
import type { TokenResponse } from './token-pair.js';

/**
 * The token and revocation endpoints (RFC 6749 4.1.3 and 6, RFC 7009; docs/mcp-oauth.md#oauth-for-mcp-clients).
 * Rules:
 * - The client authenticates as it registered (client-auth.ts); a URL client is public.
 * - The authorization code grant: code-grant.ts; the refresh token grant: refresh-grant.ts; the
 *   pair they issue: token-pair.ts.
 * - What a failed exchange changes (a code spent, a replayed code's or reused token's connection
 *   ended) commits: refusals are returned from the write and thrown after it.
 */
export { ACCESS_TTL_SECONDS, REFRESH_TTL_MS, type TokenResponse } from './token-pair.js';
export { urlClient } from './client-auth.js';
export const AUTH_METHODS = ['none', 'client_secret_post', 'client_secret_basic'] as const;
export type AuthMethod = (typeof AUTH_METHODS)[number];

/** What the token endpoint and its grants are given by the OAuth service. */
export interface TokenEndpointDeps {
  store: Store;
  repo: OAuthRepo;
  clock: Clock;
  ids: IdSource;
  resourceUrl: () => string;
  /** How long a used refresh token still gets the pair its use issued (0: never). */
  refreshGraceMs: number;
  /** The deployment's key for sealing that pair (grace.ts). */
  graceKey: Buffer;
  connectionOf: (r: { workspaceId: string; connectionId: string }) => Promise<OAuthConnectionRecord | undefined>;
  /** Inside the caller's write: ends a live connection and records it, naming the actor. */
  endInWrite: (c: OAuthConnectionRecord | undefined, why: string, actor: string) => Promise<void>;
}

/** The MCP clients' token and revocation endpoints (the device grant's are device/service.ts). */
export interface TokenEndpoint {
  /**
   * POST /oauth/token for an authenticated client: the authorization code or refresh token
   * grant. Reads and writes the codes, tokens and connections; a replayed code or a reused or
   * stolen refresh token ends its connection (recorded in the ledger). Counted by grant and outcome.
   */
  token(form: Record<string, string | undefined>, basic: { id: string; secret: string } | null): Promise<TokenResponse>;
  /** RFC 7009: ends the token's connection when it is this client's; resolves whatever it was. */
  revoke(form: Record<string, string | undefined>, basic: { id: string; secret: string } | null): Promise<void>;
}

export function createTokenEndpoint(deps: TokenEndpointDeps): TokenEndpoint {
  const { store, repo, resourceUrl, connectionOf, endInWrite } = deps;
  return {
    async token(form, basic) {
      return countGrant(form.grant_type, async () => {
        const client = await authenticateClient(repo, form, basic);
        if (form.resource !== undefined && form.resource !== resourceUrl())
          throw new AppError('invalid_target', { message: `resource must be ${resourceUrl()}.` });
        if (form.grant_type === 'authorization_code') return exchangeCode(deps, client, form);
        if (form.grant_type === 'refresh_token') return refreshGrant(deps, client, form);
        throw new AppError('unsupported_grant_type', {
          message: `grant_type must be authorization_code, refresh_token or urn:ietf:params:oauth:grant-type:device_code${form.grant_type ? `, not ${form.grant_type}` : ''}.`,
        });
      });
    },

    async revoke(form, basic) {
      const client = await authenticateClient(repo, form, basic);
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
