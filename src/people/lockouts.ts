import { AppError } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { Store } from '../store/index.js';
import type { UserRecord } from './records.js';
import type { MembersLedger } from './members.js';
import type { PeopleRepo } from './repo.js';

/**
 * Per-account lockouts (issue 15): guessing a person's current password (`PUT /api/me/password`)
 * or their two-factor codes (sign-in, confirming or turning off two-factor) is limited per
 * account, whatever address the guesses come from (the per-address and per-minute limits of
 * http/guards.ts stay in front of these).
 * Rules:
 * - Each kind (`password`, `totp`) is counted on its own. An attempt is counted *before* the
 *   secret is checked, in its own store write, so guesses sent all at once cannot outrun the
 *   count; a right answer then clears the count, in the same write as what it allows (the new
 *   password, the session, the two-factor change).
 * - The `maxFailures`-th attempt in a row locks the kind until `lockedUntil`: the first lockout
 *   lasts `minutes`, each further one without a right answer between twice as long, at most
 *   `maxMinutes`. While locked, every attempt of that kind is `429 account_locked` with
 *   `lockout`, `lockedUntil` and `retry-after`, and the secret is not even checked.
 * - A lockout is recorded in the ledger of every workspace the person belongs to
 *   (`member.locked_out`), in the same write as the attempt that made it.
 * - An owner of a workspace the person belongs to lifts it (`member.lockout_lifted`, recorded
 *   there); never their own: another owner must (a stolen session must not unlock its own
 *   account to guess on).
 * - The counts live on the person's record in the store, so every instance sharing the store
 *   counts together, and a restart forgets nothing. (A limiter package such as
 *   rate-limiter-flexible keeps its counters through its own store adapters, outside the store's
 *   transactions: its count could not be taken in the write that checks the lock, nor cleared in
 *   the write that changes the password, so the few lines here are the product's own.)
 */
export type LockKind = 'password' | 'totp';
export const LOCK_KINDS: readonly LockKind[] = ['password', 'totp'];

export interface LockoutPolicy {
  maxFailures: number;
  /** The first lockout, in ms; each further one in a row doubles it. */
  baseMs: number;
  maxMs: number;
}

/** One kind's count on an account: attempts in a row not yet answered right, and the lock. */
export interface AttemptState {
  failures: number;
  /** ISO time, or null when not locked. */
  lockedUntil: string | null;
  /** Lockouts in a row (each one lasts twice the one before). */
  locks: number;
}

/**
 * The person's record with the counts kept on it. (Declared here, beside its only reader and
 * writer, rather than in records.ts: an optional member, so every record written before reads as
 * one with no count.)
 */
export type Account = UserRecord & { attempts?: Partial<Record<LockKind, AttemptState>> };

/** An attempt taken: whether it was the last one allowed, and how many remain after it. */
export interface Attempt {
  kind: LockKind;
  /** Set when this attempt locked the kind (it is checked all the same; a right answer unlocks). */
  lockedUntil: string | null;
  attemptsLeft: number;
}

const WHAT: Record<LockKind, string> = {
  password: 'password changes (wrong current password)',
  totp: 'two-factor codes',
};

/** `429 account_locked` for a kind locked until `until` (ISO), with retry-after in seconds. */
export function accountLocked(kind: LockKind, until: string, nowMs: number): AppError {
  const seconds = Math.max(1, Math.ceil((Date.parse(until) - nowMs) / 1000));
  return new AppError('account_locked', {
    message: `This account is locked for ${WHAT[kind]} until ${until}, after too many wrong attempts.`,
    details: { lockout: kind, lockedUntil: until },
    headers: { 'retry-after': String(seconds) },
  });
}

/** The account with a kind's count removed (a right answer, or an owner's lift). */
export function cleared(account: Account, kinds: readonly LockKind[]): Account {
  if (!account.attempts) return account;
  const attempts = { ...account.attempts };
  for (const kind of kinds) delete attempts[kind];
  const { attempts: _old, ...rest } = account;
  return Object.keys(attempts).length > 0 ? { ...rest, attempts } : rest;
}

/** Until when a kind is locked now (ISO), or null. */
export function lockedUntil(account: Account | undefined, kind: LockKind, nowMs: number): string | null {
  const until = account?.attempts?.[kind]?.lockedUntil ?? null;
  return until !== null && Date.parse(until) > nowMs ? until : null;
}

/**
 * Per-account lockouts of wrong current passwords and wrong two-factor codes. Reads and writes
 * the person's account (`users`: its `attempts`), and records locks and lifts in the ledger.
 */
export interface Lockouts {
  /**
   * Counts one attempt of `kind` at the person's account before their secret is checked:
   * `account_locked` when the kind is locked; otherwise the attempt, which locks the kind when
   * it is the last one allowed (recorded in the ledger of each of their workspaces).
   */
  take(uid: string, kind: LockKind): Promise<Attempt>;
  /**
   * The error for an attempt that was wrong: `account_locked` when it was the last one allowed,
   * else `wrong` with how many attempts are left.
   */
  refusal(attempt: Attempt, wrong: (attemptsLeft: number) => AppError): AppError;
  /**
   * An owner lifts a member's lockouts (both kinds, and their counts), recorded in this
   * workspace. Not their own (`second_owner_required`), and only a member of this workspace
   * (`404` otherwise). Answers what was lifted: the kinds that were locked or counting.
   */
  lift(wid: string, uid: string, by: { userId: string }): Promise<{ userId: string; lifted: LockKind[] }>;
}

export function createLockouts(deps: {
  store: Store;
  clock: Clock;
  repo: PeopleRepo;
  policy: LockoutPolicy;
  ledger?: MembersLedger | undefined;
}): Lockouts {
  const { store, clock, repo, policy, ledger } = deps;
  const account = async (uid: string) => (await repo.getUser(uid)) as Account | undefined;
  const duration = (locks: number) => Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, locks - 1));

  return {
    async take(uid: string, kind: LockKind): Promise<Attempt> {
      return store.write(async (): Promise<Attempt> => {
        const now = clock.now();
        const latest = await account(uid);
        if (!latest) throw new AppError('unauthenticated');
        const locked = lockedUntil(latest, kind, now);
        if (locked) throw accountLocked(kind, locked, now);
        const before = latest.attempts?.[kind];
        // A lock that ran out starts a new series; how many came before still lengthens the next.
        const failures = (before?.lockedUntil ? 0 : (before?.failures ?? 0)) + 1;
        const last = failures >= policy.maxFailures;
        const locks = (before?.locks ?? 0) + (last ? 1 : 0);
        const until = last ? isoAt(now + duration(locks)) : null;
        const counted: Account = {
          ...latest,
          attempts: { ...latest.attempts, [kind]: { failures, lockedUntil: until, locks } },
        };
        await repo.putUser(counted);
        if (until) {
          for (const { workspace } of await repo.workspacesOf(uid)) {
            await ledger?.record({
              workspaceId: workspace.id,
              actor: 'system',
              kind: 'member.locked_out',
              subject: uid,
              data: { lockout: kind, lockedUntil: until, failures },
            });
          }
        }
        return { kind, lockedUntil: until, attemptsLeft: Math.max(0, policy.maxFailures - failures) };
      });
    },

    refusal(attempt: Attempt, wrong: (attemptsLeft: number) => AppError): AppError {
      return attempt.lockedUntil
        ? accountLocked(attempt.kind, attempt.lockedUntil, clock.now())
        : wrong(attempt.attemptsLeft);
    },

    async lift(wid: string, uid: string, by: { userId: string }): Promise<{ userId: string; lifted: LockKind[] }> {
      if (uid === by.userId) {
        throw new AppError('second_owner_required', {
          message: 'Your own lockout is lifted by another owner (or it runs out), never by yourself.',
          fix: 'Ask another owner of the workspace to lift it, or wait until lockedUntil.',
        });
      }
      return store.write(async () => {
        const latest = await account(uid);
        if (!latest || !(await repo.getMember(wid, uid)))
          throw new AppError('not_found', { message: 'No such member in this workspace.' });
        const lifted = LOCK_KINDS.filter((k) => latest.attempts?.[k] !== undefined);
        if (lifted.length > 0) {
          await repo.putUser(cleared(latest, LOCK_KINDS));
          await ledger?.record({
            workspaceId: wid,
            actor: `user:${by.userId}`,
            kind: 'member.lockout_lifted',
            subject: uid,
            data: {
              lifted: lifted.map((k) => ({
                lockout: k,
                lockedUntil: lockedUntil(latest, k, clock.now()),
                failures: latest.attempts![k]!.failures,
              })),
            },
          });
        }
        return { userId: uid, lifted };
      });
    },
  };
}
