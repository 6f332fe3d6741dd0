import { invalidField } from '../../errors/app-error.js';
import { isoAt, type Clock } from '../../lib/clock.js';
import type { IdSource } from '../../lib/ids.js';
import { secretHash } from '../../lib/secrets.js';
import type { Ledger } from '../../ledger/service.js';
import type { Store } from '../../store/index.js';
import type { DeviceCodeRecord } from '../records.js';
import {
  CLI_CLIENT_ID,
  checkClient,
  createPersonTokens,
  type PersonTokenResponse,
  type PersonTokens,
} from './person-tokens.js';
import { formatUserCode, newUserCode, normalizeUserCode } from './user-code.js';
import { deviceRepo } from './repo.js';
import { deviceToken } from './device-token.js';

/**
 * `svc login`: the OAuth 2.0 device authorization grant (RFC 8628) and the person-bound tokens it
 * issues to the command line (the token endpoint's device_code grant: device-token.ts).
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
 * - The pair is bound to the person and the workspace, a sign-in (`lgn_`, recorded in the ledger as
 *   `cli.signed_in` by the person); its refresh, revocation (`svc logout`) and what its access
 *   token may do on the machine routes: person-tokens.ts.
 */
export { CLI_CLIENT_ID, PERSON_SCOPE, type PersonCaller, type PersonTokenResponse } from './person-tokens.js';
export const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
export { SLOW_DOWN_SECONDS } from './device-token.js';

export interface DeviceAuthorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

/** A user code as the verification page shows it, before the person decides. */
export interface PendingDevice {
  userCode: string;
  requestedAt: string;
  requestedFrom: string;
  expiresAt: string;
}

export interface DeviceGrantDeps {
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
}

/**
 * `svc login`'s device authorization grant and the person's tokens it issues. Reads and writes
 * device codes and user codes (`deviceCodes`, `userCodes`), sign-ins and person tokens (through
 * person-tokens.ts); reads memberships; records decisions and sign-ins in the ledger.
 */
export interface DeviceGrant {
  /** The command line's client id (public). */
  clientId: typeof CLI_CLIENT_ID;
  /** The refresh_token grant for `prt_` tokens (person-tokens.ts). */
  refresh: PersonTokens['refresh'];
  /** RFC 7009 for a person's token (person-tokens.ts). */
  revoke: PersonTokens['revoke'];
  /** A `pat_` token's person on a machine route (person-tokens.ts). */
  resolve: PersonTokens['resolve'];
  /** A workspace's name, for whoami (person-tokens.ts). */
  workspaceName: PersonTokens['workspaceName'];
  /** The page where a person types the user code. */
  verificationUri(): string;
  /** RFC 8628 3.1-3.2: a new device code and user code, stored (the device code as a hash). */
  authorize(form: Record<string, string | undefined>, requestedFrom: string): Promise<DeviceAuthorization>;
  /** The sign-in a typed user code stands for, while a person may still decide it; else the problem to show. */
  pending(typed: string): Promise<PendingDevice | { problem: string }>;
  /**
   * A signed-in person's decision on a user code: approve for `workspaceId` (the caller has
   * checked that the person belongs to it) or deny. Recorded in the ledger as theirs.
   */
  decide(typed: string, userId: string, workspaceId: string, decision: 'approve' | 'deny'): Promise<void>;
  /**
   * The token endpoint's device_code grant (RFC 8628 3.4-3.5): pending, slow_down, denied,
   * expired, or once approved one pair (a sign-in, recorded in the ledger), once.
   */
  deviceToken(form: Record<string, string | undefined>): Promise<PersonTokenResponse>;
}

export function createDeviceGrant(deps: DeviceGrantDeps): DeviceGrant {
  const { store, clock, ids, ledger } = deps;
  const repo = deviceRepo(store);
  const tokens = createPersonTokens(deps);

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
    /** The refresh_token grant for `prt_` tokens, revocation, a `pat_` token's person (person-tokens.ts). */
    refresh: tokens.refresh,
    revoke: tokens.revoke,
    resolve: tokens.resolve,
    workspaceName: tokens.workspaceName,
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

    deviceToken: (form) => deviceToken({ store, clock, ids, ledger, repo, tokens }, form),
  };
}
