import { AppError, invalidField } from '../../errors/app-error.js';
import { isoAt, type Clock } from '../../lib/clock.js';
import type { IdSource } from '../../lib/ids.js';
import { secretHash } from '../../lib/secrets.js';
import type { Ledger } from '../../ledger/service.js';
import type { Store } from '../../store/index.js';
import type { PersonLoginRecord } from '../records.js';
import { CLI_CLIENT_ID, checkClient, outcome, type PersonTokenResponse, type PersonTokens } from './person-tokens.js';
import type { DeviceRepo } from './repo.js';

/** RFC 8628 3.5: each slow_down adds this much to the interval. */
export const SLOW_DOWN_SECONDS = 5;

/**
 * The token endpoint's device_code grant (RFC 8628 3.4-3.5), checked in order: the client and the
 * code; a code already exchanged; a code past its lifetime (approved or not: an approval left
 * unexchanged is not a sign-in any more); a poll sooner than the interval (`slow_down`, the
 * interval growing); still pending; denied; else one sign-in (`lgn_`, recorded in the ledger as
 * `cli.signed_in`) and its token pair, once. The poll's time is kept and an approved code spent
 * in the same write as the answer: refusals are returned from the write and thrown after it, so
 * what they change commits.
 */
export async function deviceToken(
  deps: {
    store: Store;
    clock: Clock;
    ids: IdSource;
    ledger: Ledger;
    repo: DeviceRepo;
    tokens: Pick<PersonTokens, 'issuePairInWrite'>;
  },
  form: Record<string, string | undefined>,
): Promise<PersonTokenResponse> {
  const { store, clock, ids, ledger, repo, tokens } = deps;
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
      // A code is good until it expires, approved or not (RFC 8628 3.5): an approval left
      // unexchanged past then is not a sign-in any more.
      if (record.status !== 'denied' && Date.parse(record.expiresAt) <= now)
        return new AppError('expired_token', {
          message:
            record.status === 'approved'
              ? 'The code expired before this device exchanged it. Run svc login again.'
              : 'The code expired before anyone approved it. Run svc login again.',
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
      return tokens.issuePairInWrite(login, now);
    }),
  );
}
