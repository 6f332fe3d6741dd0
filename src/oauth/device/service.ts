import { AppError, invalidField } from '../../errors/app-error.js';
import { isoAt, type Clock } from '../../lib/clock.js';
import type { IdSource } from '../../lib/ids.js';
import { secretHash } from '../../lib/secrets.js';
import type { Ledger } from '../../ledger/service.js';
import type { Role } from '../../people/records.js';
import type { ServiceTokenScope } from '../../service-tokens/records.js';
import type { Store } from '../../store/index.js';
import type { DeviceCodeRecord, PersonLoginRecord } from '../records.js';
import { openPair, sealPair } from '../grace.js';
import { rolesForScope } from './person-access.js';
import { formatUserCode, newUserCode, normalizeUserCode } from './user-code.js';
import { deviceRepo } from './repo.js';

/**
 * `svc login`: the OAuth 2.0 device authorization grant (RFC 8628) and the person-bound tokens it
 * issues to the command line.
 * Rules:
 * - One public client, CLI_CLIENT_ID (no secret: a command line keeps none). The device
 *   authorization endpoint answers a device code (`dvc_`, 256 bits, stored as a hash) and a user
 *   code (user-code.ts), valid `deviceCodeTtlSeconds`.
 * - A person signed in to the console approves or denies the user code for one workspace they
 *   belong to (http.ts); the decision is recorded in the ledger as theirs.
 * - The token endpoint answers, for the device code (RFC 8628 3.5): `authorization_pending` until
 *   the person decides; `slow_down` when polled sooner than the interval since the last poll (the
 *   interval then grows by 5 seconds, as the client's must); `access_denied`; `expired_token`
 *   past the code's lifetime; once approved, one token pair, once (the code is then spent:
 *   `invalid_grant`).
 * - The pair is bound to the person and the workspace, a login (`lgn_`): access `pat_`
 *   (`personAccessTtlSeconds`), refresh `prt_` (`personRefreshTtlDays`), stored as hashes. A
 *   refresh token is used once: each use issues a new pair and stops the old access token; the same
 *   refresh token again within `refreshGraceMs` gets the same pair (grace.ts: two commands
 *   refreshing at once), later it ends the login.
 * - A person's token works on the machine routes as the person: the role they hold in the
 *   workspace now (read at every request) decides, within person-access.ts; the ledger names
 *   them (`user:usr_…`). Leaving the workspace stops it at the next request.
 * - Revoking either token of a login ends the login (`svc logout`; RFC 7009: 200 {} whatever it was).
 */
export const CLI_CLIENT_ID = 'svc-cli';
export const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
export const PERSON_SCOPE = 'svc:cli';
/** RFC 8628 3.5: each slow_down adds this much to the interval. */
export const SLOW_DOWN_SECONDS = 5;

export interface DeviceAuthorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

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

/** A user code as the verification page shows it, before the person decides. */
export interface PendingDevice {
  userCode: string;
  requestedAt: string;
  requestedFrom: string;
  expiresAt: string;
}

const outcome = <T>(result: T | AppError): T => {
  if (result instanceof AppError) throw result;
  return result;
};

export function createDeviceGrant(deps: {
  store: Store;
  clock: Clock;
  ids: IdSource;
  ledger: Ledger;
  issuer: () => string;
  deviceCodeTtlSeconds: number;
  pollIntervalSeconds: number;
  accessTtlSeconds: number;
  refreshTtlDays: number;
  refreshGraceMs: number;
  graceKey: Buffer;
}) {
  const { store, clock, ids, ledger } = deps;
  const repo = deviceRepo(store);

  const checkClient = (form: Record<string, string | undefined>) => {
    if (form.client_id !== CLI_CLIENT_ID)
      throw new AppError('invalid_client', {
        message: `The device authorization grant here is for the svc command line: client_id must be ${CLI_CLIENT_ID}.`,
      });
    if (form.client_secret !== undefined)
      throw new AppError('invalid_client', { message: `${CLI_CLIENT_ID} is a public client: send no client_secret.` });
  };

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

  const loginOf = (r: { workspaceId: string; loginId: string }) => repo.getLogin(r.workspaceId, r.loginId);

  /** The device code record a typed user code stands for, or undefined. */
  const byUserCode = async (typed: string): Promise<{ hash: string; record: DeviceCodeRecord } | undefined> => {
    const code = normalizeUserCode(typed);
    if (code === null) return undefined;
    const hash = await repo.deviceOfUserCode(code);
    const record = hash === undefined ? undefined : await repo.getDevice(hash);
    return hash !== undefined && record ? { hash, record } : undefined;
  };

  return {
    clientId: CLI_CLIENT_ID,
    verificationUri: () => `${deps.issuer()}/device`,

    /** RFC 8628 3.1-3.2: a new device code and user code. */
    async authorize(form: Record<string, string | undefined>, requestedFrom: string): Promise<DeviceAuthorization> {
      checkClient(form);
      const deviceCode = ids.secret('dvc');
      const hash = secretHash(deviceCode);
      const userCode = await store.write(async () => {
        const now = clock.now();
        // A user code names one device code at a time: drawn again on the rare collision with a live one.
        for (;;) {
          const candidate = newUserCode();
          const taken = await repo.deviceOfUserCode(candidate);
          const holder = taken === undefined ? undefined : await repo.getDevice(taken);
          if (holder && Date.parse(holder.expiresAt) > now && holder.status === 'pending') continue;
          const expiresAt = isoAt(now + deps.deviceCodeTtlSeconds * 1000);
          await repo.putUserCode(candidate, hash, expiresAt);
          await repo.putDevice(hash, {
            userCode: candidate,
            clientId: CLI_CLIENT_ID,
            requestedAt: isoAt(now),
            requestedFrom,
            expiresAt,
            intervalSeconds: deps.pollIntervalSeconds,
            lastPolledAt: null,
            status: 'pending',
            userId: null,
            workspaceId: null,
            decidedAt: null,
          });
          return candidate;
        }
      });
      const shown = formatUserCode(userCode);
      const uri = `${deps.issuer()}/device`;
      return {
        device_code: deviceCode,
        user_code: shown,
        verification_uri: uri,
        verification_uri_complete: `${uri}?user_code=${encodeURIComponent(shown)}`,
        expires_in: deps.deviceCodeTtlSeconds,
        interval: deps.pollIntervalSeconds,
      };
    },

    /** The sign-in a typed user code stands for, while a person may still decide it; else the problem to show. */
    async pending(typed: string): Promise<PendingDevice | { problem: string }> {
      const found = await byUserCode(typed);
      if (!found) return { problem: 'No sign-in waits for that code. Check the code the command line printed.' };
      const { record } = found;
      if (record.status !== 'pending')
        return { problem: 'That code was already used. Run svc login again for a new one.' };
      if (Date.parse(record.expiresAt) <= clock.now())
        return { problem: 'That code has expired. Run svc login again for a new one.' };
      return {
        userCode: formatUserCode(record.userCode),
        requestedAt: record.requestedAt,
        requestedFrom: record.requestedFrom,
        expiresAt: record.expiresAt,
      };
    },

    /**
     * A signed-in person's decision on a user code: approve for `workspaceId` (the caller has
     * checked that the person belongs to it) or deny. Recorded in the ledger as theirs.
     */
    async decide(typed: string, userId: string, workspaceId: string, decision: 'approve' | 'deny'): Promise<void> {
      const found = await byUserCode(typed);
      if (!found) throw invalidField('user_code', 'no sign-in waits for that code');
      await store.write(async () => {
        const now = clock.now();
        const record = await repo.getDevice(found.hash);
        if (!record || record.status !== 'pending')
          throw invalidField('user_code', 'that code was already used: run svc login again');
        if (Date.parse(record.expiresAt) <= now)
          throw invalidField('user_code', 'that code has expired: run svc login again');
        if (!(await repo.roleIn(userId, workspaceId)))
          throw invalidField('workspace', 'you are not a member of that workspace');
        await repo.putDevice(found.hash, {
          ...record,
          status: decision === 'approve' ? 'approved' : 'denied',
          userId,
          workspaceId,
          decidedAt: isoAt(now),
        });
        await ledger.record({
          workspaceId,
          actor: `user:${userId}`,
          kind: decision === 'approve' ? 'cli.login_approved' : 'cli.login_denied',
          subject: formatUserCode(record.userCode),
          data: { clientId: record.clientId, requestedFrom: record.requestedFrom },
        });
      });
    },

    /** The token endpoint's device_code grant (RFC 8628 3.4-3.5). */
    async deviceToken(form: Record<string, string | undefined>): Promise<PersonTokenResponse> {
      checkClient(form);
      if (!form.device_code) throw invalidField('device_code', 'device_code is required');
      const hash = secretHash(form.device_code);
      // The poll's time is kept (slow_down) and an approved code spent in the same write as the
      // answer: refusals are returned from the write and thrown after it, so what they change commits.
      return outcome(
        await store.write(async (): Promise<PersonTokenResponse | AppError> => {
          const now = clock.now();
          const record = await repo.getDevice(hash);
          if (!record || record.clientId !== CLI_CLIENT_ID)
            return new AppError('invalid_grant', { message: 'Unknown device code.' });
          if (record.status === 'used')
            return new AppError('invalid_grant', { message: 'This device code was already exchanged.' });
          if (record.status === 'pending' && Date.parse(record.expiresAt) <= now)
            return new AppError('expired_token', {
              message: 'The code expired before anyone approved it. Run svc login again.',
            });
          const last = record.lastPolledAt === null ? null : Date.parse(record.lastPolledAt);
          if (last !== null && now - last < record.intervalSeconds * 1000) {
            const intervalSeconds = record.intervalSeconds + SLOW_DOWN_SECONDS;
            await repo.putDevice(hash, { ...record, intervalSeconds, lastPolledAt: isoAt(now) });
            return new AppError('slow_down', {
              message: `Polled too soon: wait ${intervalSeconds} seconds between polls.`,
            });
          }
          await repo.putDevice(hash, { ...record, lastPolledAt: isoAt(now) });
          if (record.status === 'pending')
            return new AppError('authorization_pending', {
              message: 'Waiting for a person to approve the code in the console.',
            });
          if (record.status === 'denied')
            return new AppError('access_denied', { message: 'The person denied this sign-in.' });
          const login: PersonLoginRecord = {
            id: ids.id('lgn'),
            workspaceId: record.workspaceId!,
            userId: record.userId!,
            clientId: record.clientId,
            createdAt: isoAt(now),
            requestedFrom: record.requestedFrom,
            endedAt: null,
            endedWhy: null,
          };
          await repo.putLogin(login);
          await repo.putDevice(hash, { ...record, lastPolledAt: isoAt(now), status: 'used' });
          await repo.removeUserCode(record.userCode);
          await ledger.record({
            workspaceId: login.workspaceId,
            actor: `user:${login.userId}`,
            kind: 'cli.signed_in',
            subject: login.id,
            data: { clientId: login.clientId, requestedFrom: login.requestedFrom },
          });
          return issuePairInWrite(login, now);
        }),
      );
    },

    /** The token endpoint's refresh_token grant for a `prt_` token. */
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

    /** A workspace's name, for what the command line shows (whoami). */
    async workspaceName(wid: string): Promise<string> {
      return (await repo.getWorkspace(wid))?.name ?? wid;
    },

    /** RFC 7009 for a person's token: ends its login; nothing is said about what the token was. */
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

    /**
     * A `pat_` token as the person it stands for on a route needing `scope`: 401 invalid_token
     * (unknown, signed out, or no longer a member) or token_expired, 403 forbidden when the
     * person's role may not do what the route does.
     */
    async resolve(value: string, scope: ServiceTokenScope | undefined): Promise<PersonCaller> {
      const token = await repo.getToken(secretHash(value));
      if (!token || token.kind !== 'access')
        throw new AppError('invalid_token', {
          message: 'This sign-in token is unknown or was replaced by a refresh.',
          fix: 'Run svc login again.',
        });
      if (Date.parse(token.expiresAt) <= clock.now())
        throw new AppError('token_expired', {
          message: 'This sign-in token expired.',
          fix: 'Refresh it with its refresh token (the svc command line does so by itself), or run svc login again.',
        });
      const [login, role, user, workspace] = await Promise.all([
        loginOf(token),
        repo.roleIn(token.userId, token.workspaceId),
        repo.getUser(token.userId),
        repo.getWorkspace(token.workspaceId),
      ]);
      if (!login || login.endedAt)
        throw new AppError('invalid_token', { message: 'This sign-in has ended.', fix: 'Run svc login again.' });
      if (!role || !user || !workspace)
        throw new AppError('invalid_token', {
          message: 'You are no longer a member of this workspace.',
          fix: 'Ask an owner or admin of the workspace to add you again, then run svc login.',
        });
      // As in the console: a person holding a password someone else chose (an operator's reset)
      // may do nothing until they change it.
      if (user.mustChangePassword)
        throw new AppError('forbidden', {
          message: 'Change the one-time password first.',
          fix: 'Sign in to the console, choose your own password, then run the command again.',
        });
      const roles = rolesForScope(scope);
      if (roles && !roles.includes(role))
        throw new AppError('forbidden', {
          message: `Only ${roles.join(' or ')} may do this from the command line; you are ${role} in this workspace.`,
          fix: 'Ask an owner or admin of the workspace to do it, or to change your role.',
        });
      return {
        workspaceId: token.workspaceId,
        user: { id: user.id, email: user.email, name: user.name },
        role,
        loginId: login.id,
        expiresAt: token.expiresAt,
      };
    },
  };
}

export type DeviceGrant = ReturnType<typeof createDeviceGrant>;
