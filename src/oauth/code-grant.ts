import { createHash } from 'node:crypto';
import { AppError, invalidField } from '../errors/app-error.js';
import { isoAt } from '../lib/clock.js';
import { secretHash } from '../lib/secrets.js';
import type { OAuthClientRecord } from './records.js';
import { sameHash } from './client-auth.js';
import { issuePairInWrite, outcome, type TokenResponse } from './token-pair.js';
import type { TokenEndpointDeps } from './token.js';

/**
 * The authorization code grant (RFC 6749 4.1.3, with PKCE): a code is exchanged once, by its
 * client, before it expires, with the redirect URI and the PKCE verifier it was issued for; a code
 * presented again ends the connection it made (RFC 6749 4.1.2). The code is read, checked and
 * spent in one write, so two exchanges racing with one code conflict and the one retried sees the
 * code used; what a failed exchange changes commits (token-pair.ts `outcome`).
 */
export async function exchangeCode(
  deps: TokenEndpointDeps,
  client: OAuthClientRecord,
  form: Record<string, string | undefined>,
): Promise<TokenResponse> {
  const { store, repo, clock, connectionOf, endInWrite } = deps;
  if (!form.code || !form.code_verifier || !form.redirect_uri)
    throw invalidField(null, 'code, code_verifier and redirect_uri are required');
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(form.code_verifier))
    throw invalidField('code_verifier', 'code_verifier must be 43 to 128 unreserved characters');
  const codeHash = secretHash(form.code);
  return outcome(
    await store.write(async (): Promise<TokenResponse | AppError> => {
      const now = clock.now();
      const code = await repo.getCode(codeHash);
      if (!code || code.clientId !== client.clientId)
        return new AppError('invalid_grant', { message: 'Unknown code, or a code issued to another client.' });
      const connection = await connectionOf(code);
      if (code.usedAt) {
        // A replayed code: whoever holds it, the tokens it minted stop now.
        await endInWrite(connection, 'authorization code replayed', 'system');
        return new AppError('invalid_grant', {
          message: 'This code was already used; the connection it made is ended.',
        });
      }
      await repo.putCode(codeHash, { ...code, usedAt: isoAt(now) });
      if (Date.parse(code.expiresAt) <= now) return new AppError('invalid_grant', { message: 'The code expired.' });
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
      return issuePairInWrite(deps, connection, now);
    }),
  );
}
