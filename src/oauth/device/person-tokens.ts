import { AppError, invalidField } from '../../errors/app-error.js';
import { isoAt, type Clock } from '../../lib/clock.js';
import type { IdSource } from '../../lib/ids.js';
import { secretHash } from '../../lib/secrets.js';
import type { Ledger } from '../../ledger/service.js';
import type { Role } from '../../people/records.js';
import type { ServiceTokenScope } from '../../service-tokens/records.js';
import type { Store } from '../../store/index.js';
import type { PersonLoginRecord } from '../records.js';
import { openPair, sealPair } from '../grace.js';
import { deviceRepo } from './repo.js';
import { resolvePersonToken } from './person-caller.js';

/**
 * A person's command-line tokens (service.ts issues the first pair once a device code is
 * approved): the pair, the refresh_token grant for `prt_` tokens, revocation, and what a `pat_`
 * token stands for on the machine routes (person-caller.ts).
 * Rules:
 * - A pair is bound to one sign-in (`lgn_`: the person and the workspace): access `pat_`
 *   (`accessTtlSeconds`), refresh `prt_` (`refreshTtlDays`), stored as hashes.
 * - A refresh token is used once: each use issues a new pair and stops the old access token; the
 *   same refresh token again within `refreshGraceMs` gets the same pair (grace.ts), later it ends
 *   the sign-in. A person no longer in the workspace gets no new pair, and their sign-in ends.
 * - Revoking either token ends the sign-in (RFC 7009: nothing is said about what the token was).
 * - A `pat_` token is the person with the role they hold now (read at every request), within
 *   person-access.ts; refused while they hold a one-time password, as the console refuses them.
 */
export const CLI_CLIENT_ID = 'svc-cli';
export const PERSON_SCOPE = 'svc:cli';

export interface PersonTokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

/** A person's token as the machine routes see it. */
export interface PersonCaller {
  workspaceId: string;
  user: { id: string; email: string; name: string };
  role: Role;
  loginId: string;
  expiresAt: string;
}

export const outcome = <T>(result: T | AppError): T => {
  if (result instanceof AppError) throw result;
  return result;
};

/** The command line's client: public, without a secret. */
export function checkClient(form: Record<string, string | undefined>): void {
  if (form.client_id !== CLI_CLIENT_ID)
    throw new AppError('invalid_client', {
      message: `The device authorization grant here is for the svc command line: client_id must be ${CLI_CLIENT_ID}.`,
    });
  if (form.client_secret !== undefined)
    throw new AppError('invalid_client', { message: `${CLI_CLIENT_ID} is a public client: send no client_secret.` });
}

/**
 * A person's command-line tokens: reads and writes their sign-ins (`personLogins`) and tokens
 * (`personTokens`, as hashes), reads memberships, people and workspaces; records the end of a
 * sign-in in the ledger.
 */
export interface PersonTokens {
  /** Inside the caller's write: a new pair for the sign-in. */
  issuePairInWrite(login: PersonLoginRecord, nowMs: number): Promise<PersonTokenResponse>;
  /** The token endpoint's refresh_token grant for a `prt_` token. */
  refresh(form: Record<string, string | undefined>): Promise<PersonTokenResponse>;
  /** A workspace's name, for what the command line shows (whoami). */
  workspaceName(wid: string): Promise<string>;
  /** RFC 7009 for a person's token: ends its login; nothing is said about what the token was. */
  revoke(form: Record<string, string | undefined>): Promise<void>;
  /**
   * A `pat_` token as the person it stands for on a route needing `scope`: 401 invalid_token
   * (unknown, signed out, or no longer a member) or token_expired, 403 forbidden when the
   * person's role may not do what the route does.
   */
  resolve(value: string, scope: ServiceTokenScope | undefined): Promise<PersonCaller>;
}

export function createPersonTokens(deps: {
  store: Store;
  clock: Clock;
  ids: IdSource;
  ledger: Ledger;
  accessTtlSeconds: number;
  refreshTtlDays: number;
  refreshGraceMs: number;
  graceKey: Buffer;
}): PersonTokens {
  const { store, clock, ids, ledger } = deps;
  const repo = deviceRepo(store);

  const endLoginInWrite = async (login: PersonLoginRecord | undefined, why: string, actor: string) => {
    if (!login || login.endedAt) return;
    await repo.putLogin({ ...login, endedAt: isoAt(clock.now()), endedWhy: why });
    await ledger.record({
      workspaceId: login.workspaceId,
      actor,
      kind: 'cli.signed_out',
      subject: login.id,
      data: { why, userId: login.userId },
    });
  };

  const loginOf = (r: { workspaceId: string; loginId: string }) => repo.getLogin(r.workspaceId, r.loginId);

  /** Inside a write: a new pair for the sign-in. */
  const issuePairInWrite = async (login: PersonLoginRecord, nowMs: number): Promise<PersonTokenResponse> => {
    const access = ids.secret('pat');
    const refresh = ids.secret('prt');
    const accessHash = secretHash(access);
    const base = {
      loginId: login.id,
      workspaceId: login.workspaceId,
      userId: login.userId,
      clientId: login.clientId,
      usedAt: null,
    };
    await repo.putToken(accessHash, {
      ...base,
      kind: 'access',
      expiresAt: isoAt(nowMs + deps.accessTtlSeconds * 1000),
      pairedAccess: null,
    });
    await repo.putToken(secretHash(refresh), {
      ...base,
      kind: 'refresh',
      expiresAt: isoAt(nowMs + deps.refreshTtlDays * 86_400_000),
      pairedAccess: accessHash,
    });
    return {
      access_token: access,
      token_type: 'Bearer',
      expires_in: deps.accessTtlSeconds,
      refresh_token: refresh,
      scope: PERSON_SCOPE,
    };
  };

  return {
    issuePairInWrite,

    async refresh(form: Record<string, string | undefined>): Promise<PersonTokenResponse> {
      checkClient(form);
      const value = form.refresh_token;
      if (!value) throw invalidField('refresh_token', 'refresh_token is required');
      const hash = secretHash(value);
      return outcome(
        await store.write(async (): Promise<PersonTokenResponse | AppError> => {
          const now = clock.now();
          const token = await repo.getToken(hash);
          if (!token || token.kind !== 'refresh')
            return new AppError('invalid_grant', { message: 'Unknown refresh token.' });
          const login = await loginOf(token);
          if (token.usedAt) {
            if (token.grace && Date.parse(token.grace.until) > now && login && !login.endedAt) {
              const pair = openPair<PersonTokenResponse>(deps.graceKey, token.grace.sealed, value, hash);
              if (pair) {
                const elapsed = Math.floor((now - Date.parse(token.usedAt)) / 1000);
                return { ...pair, expires_in: Math.max(0, pair.expires_in - elapsed) };
              }
            }
            await endLoginInWrite(login, 'refresh token reused', 'system');
            return new AppError('invalid_grant', {
              message: 'This refresh token was already used: the sign-in is ended. Run svc login again.',
            });
          }
          if (!login || login.endedAt)
            return new AppError('invalid_grant', { message: 'This sign-in has ended. Run svc login again.' });
          if (Date.parse(token.expiresAt) <= now)
            return new AppError('invalid_grant', { message: 'The refresh token expired. Run svc login again.' });
          if (!(await repo.roleIn(login.userId, login.workspaceId))) {
            await endLoginInWrite(login, 'the person left the workspace', 'system');
            return new AppError('invalid_grant', { message: 'You are no longer a member of this workspace.' });
          }
          if (token.pairedAccess) await repo.removeToken(token.pairedAccess);
          const pair = await issuePairInWrite(login, now);
          await repo.putToken(hash, {
            ...token,
            usedAt: isoAt(now),
            grace:
              deps.refreshGraceMs > 0
                ? { until: isoAt(now + deps.refreshGraceMs), sealed: sealPair(deps.graceKey, pair, value, hash) }
                : null,
          });
          return pair;
        }),
      );
    },

    async workspaceName(wid: string): Promise<string> {
      return (await repo.getWorkspace(wid))?.name ?? wid;
    },

    async revoke(form: Record<string, string | undefined>): Promise<void> {
      checkClient(form);
      if (!form.token) return;
      const hash = secretHash(form.token);
      await store.write(async () => {
        const token = await repo.getToken(hash);
        if (!token) return;
        await endLoginInWrite(await loginOf(token), 'signed out (svc logout)', `user:${token.userId}`);
      });
    },

    resolve: (value, scope) => resolvePersonToken({ repo, clock }, value, scope),
  };
}
