import { AppError, invalidField } from '../errors/app-error.js';
import { isoAt } from '../lib/clock.js';
import { secretHash } from '../lib/secrets.js';
import type { OAuthClientRecord } from './records.js';
import { openPair, sealPair } from './grace.js';
import { DEFAULT_SCOPE, refreshScopeProblem } from './scopes.js';
import { issuePairInWrite, outcome, type TokenResponse } from './token-pair.js';
import type { TokenEndpointDeps } from './token.js';

/**
 * The refresh token grant (RFC 6749 6) for an MCP client's connection:
 * - A refresh token is used once: each refresh issues a new pair and stops the old access token.
 * - The same client presenting a used refresh token again within `refreshGraceMs` of its use gets
 *   the same new pair (grace.ts); later, the reuse ends the whole connection.
 * - A refresh token presented by another client than its own (used or not, within the window or
 *   after it) ends the whole connection too.
 * - Read, checked and used in one write, like a code: of two refreshes racing, the one retried
 *   sees the token used (and gets the grace pair, or ends the connection); what a refusal changes
 *   commits (token-pair.ts `outcome`).
 */
export async function refreshGrant(
  deps: TokenEndpointDeps,
  client: OAuthClientRecord,
  form: Record<string, string | undefined>,
): Promise<TokenResponse> {
  const { store, repo, clock, connectionOf, endInWrite } = deps;
  if (!form.refresh_token) throw invalidField('refresh_token', 'refresh_token is required');
  const presented = form.refresh_token;
  const tokenHash = secretHash(presented);
  return outcome(
    await store.write(async (): Promise<TokenResponse | AppError> => {
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
          const pair = openPair<TokenResponse>(deps.graceKey, token.grace.sealed, presented, tokenHash);
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
      const pair = await issuePairInWrite(deps, connection, now);
      // sealPair draws a random IV: run again on a retry, it seals that attempt's pair
      // afresh; only the committed attempt's pair and seal are stored, and nothing leaves.
      await repo.putToken(tokenHash, {
        ...token,
        usedAt: isoAt(now),
        grace:
          deps.refreshGraceMs > 0
            ? { until: isoAt(now + deps.refreshGraceMs), sealed: sealPair(deps.graceKey, pair, presented, tokenHash) }
            : null,
      });
      return pair;
    }),
  );
}
