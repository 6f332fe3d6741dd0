import { AppError } from '../errors/app-error.js';
import { isoAt } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import { secretHash } from '../lib/secrets.js';
import type { OAuthConnectionRecord } from './records.js';
import type { OAuthRepo } from './repo.js';
import { DEFAULT_SCOPE, offline } from './scopes.js';

/**
 * The tokens a connection's grant issues (token.ts): an access token (`aat_`) that lasts
 * ACCESS_TTL_SECONDS, and with `offline_access` (scopes.ts) a refresh token (`art_`) that names
 * the access token it came with, so its use can stop that one. Both are stored only as hashes.
 */
export const ACCESS_TTL_SECONDS = 3600;
export const REFRESH_TTL_MS = 30 * 86_400_000;

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token?: string;
  scope: string;
}

/**
 * What a failed exchange changes (a code spent, a replayed code's or reused token's connection
 * ended) must commit: a grant returns its refusal from the write, and this throws it after.
 */
export const outcome = <T>(result: T | AppError): T => {
  if (result instanceof AppError) throw result;
  return result;
};

/** Inside the caller's write: a new access token (and refresh token, when offline) for the connection. */
export async function issuePairInWrite(
  deps: { repo: OAuthRepo; ids: IdSource },
  c: OAuthConnectionRecord,
  nowMs: number,
): Promise<TokenResponse> {
  const scope = c.scope ?? DEFAULT_SCOPE;
  const access = deps.ids.secret('aat');
  const refresh = offline(scope) ? deps.ids.secret('art') : null;
  const accessHash = secretHash(access);
  const base = {
    connectionId: c.id,
    workspaceId: c.workspaceId,
    agentId: c.agentId,
    clientId: c.clientId,
    usedAt: null,
  };
  await deps.repo.putToken(accessHash, {
    ...base,
    kind: 'access',
    expiresAt: isoAt(nowMs + ACCESS_TTL_SECONDS * 1000),
    pairedAccess: null,
  });
  if (refresh)
    await deps.repo.putToken(secretHash(refresh), {
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
}
