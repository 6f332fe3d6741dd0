import { AppError, invalidField } from '../errors/app-error.js';
import { isoAt } from '../lib/clock.js';
import { secretHash } from '../lib/secrets.js';
import type { UserRecord } from './records.js';
import type { PeopleContext } from './context.js';
import { cleared, type Account } from './lockouts.js';
import { hashPassword, verifyPassword } from './passwords.js';
import { notCurrentPassword, totpRequired, USED_CODE, wrongCredentials } from './refusals.js';
import { signInStep, type SecondFactor } from './second-factor.js';
import { toPublicUser, totpOn, type PublicUser, type WorkspaceView } from './views.js';
import { workspacesOf } from './workspaces.js';

/**
 * Signing in and changing a password: the two operations that check a password and start a
 * session. Rules (the service's, service.ts): a wrong email and a wrong password answer alike
 * after the same work; the password checked must still be the password when the session is
 * stored; a two-factor code or recovery code is spent with the session, in one write.
 */

export interface SignedIn {
  secret: string;
  user: PublicUser;
  workspaces: WorkspaceView[];
  /** After a recovery code signed in: how many are left. */
  recoveryCodesLeft?: number;
}

/** Inside the write: spends the second factor on the latest account, or refuses; the recovery codes left. */
async function spendSecondFactorInWrite(
  ctx: PeopleContext,
  user: UserRecord,
  latest: UserRecord,
  step: SecondFactor | null,
): Promise<number | undefined> {
  if (!totpOn(latest)) return undefined;
  if (step === null || latest.totp!.sealed !== user.totp?.sealed) throw totpRequired(USED_CODE);
  if ('recovery' in step) {
    // Spent with the session, like a code: a racing sign-in with it finds it gone.
    const left = (latest.totp!.recovery ?? []).filter((h) => h !== step.recovery);
    if (left.length === (latest.totp!.recovery ?? []).length) throw totpRequired(USED_CODE);
    await ctx.repo.putUser(cleared({ ...latest, totp: { ...latest.totp!, recovery: left } }, ['totp']));
    return left.length;
  }
  if (step.step <= (latest.totp!.lastStep ?? -1)) throw totpRequired(USED_CODE);
  // A right code clears the count of wrong ones.
  await ctx.repo.putUser(cleared({ ...latest, totp: { ...latest.totp!, lastStep: step.step } }, ['totp']));
  return undefined;
}

export async function signIn(ctx: PeopleContext, email: string, password: string, totp?: string): Promise<SignedIn> {
  const { store, repo, clock, ids } = ctx;
  const user = await repo.userByEmail(email);
  const ok = await verifyPassword(user?.passwordHash, password);
  if (!user || !ok) throw wrongCredentials();
  const step = await signInStep(ctx, user, totp);
  let recoveryCodesLeft: number | undefined;
  const secret = ids.secret('sid');
  const now = clock.now();
  await store.write(async () => {
    // The password verified above must still be the password when the session is stored:
    // a sign-in racing a password change must not outlive it.
    const latest = await repo.getUser(user.id);
    if (latest?.passwordHash !== user.passwordHash) throw wrongCredentials();
    // The code is spent with the session: a second sign-in with it, even a racing one, fails.
    recoveryCodesLeft = await spendSecondFactorInWrite(ctx, user, latest, step);
    // Sessions are not kept past their expiry: each sign-in clears the person's expired ones.
    await repo.removeExpiredSessionsOf(user.id, isoAt(now));
    await repo.putSession(secretHash(secret), {
      userId: user.id,
      createdAt: isoAt(now),
      expiresAt: isoAt(now + ctx.sessionTtlMs),
    });
  });
  return {
    secret,
    user: toPublicUser(user),
    workspaces: await workspacesOf(ctx, user.id),
    ...(recoveryCodesLeft !== undefined ? { recoveryCodesLeft } : {}),
  };
}

/**
 * Changes a person's password and ends every session of theirs, the one making the change too (a
 * stolen copy of its cookie must not survive the change), and their command-line sign-ins; the
 * caller gets a new session secret in its place.
 */
export async function changePassword(
  ctx: PeopleContext,
  uid: string,
  currentPassword: string,
  newPassword: string,
): Promise<{ sessionsEnded: number; secret: string }> {
  const { store, repo, clock, ids, lockouts } = ctx;
  const user = await repo.getUser(uid);
  if (!user) throw new AppError('unauthenticated');
  if (newPassword === currentPassword) {
    throw invalidField('newPassword', '"newPassword" must differ from the current password');
  }
  // Counted before it is checked (lockouts.ts): a burst of guesses cannot outrun the count.
  const attempt = await lockouts.take(uid, 'password');
  if (!(await verifyPassword(user.passwordHash, currentPassword))) {
    throw lockouts.refusal(attempt, notCurrentPassword);
  }
  const passwordHash = await hashPassword(newPassword);
  const secret = ids.secret('sid');
  const now = clock.now();
  return store.write(async () => {
    const latest = await repo.getUser(uid);
    if (!latest) throw new AppError('unauthenticated');
    // Two changes racing with the same current password: only the first one wins.
    if (latest.passwordHash !== user.passwordHash) {
      throw notCurrentPassword();
    }
    const { mustChangePassword: _was, ...rest } = latest as Account;
    await repo.putUser(cleared({ ...rest, passwordHash }, ['password']));
    const sessionsEnded = await repo.removeSessionsOf(uid);
    // Command-line sign-ins made with the old password end too (a stolen laptop's among them).
    await ctx.principalEnded.credentialsChanged(uid, 'password changed', now);
    await repo.putSession(secretHash(secret), {
      userId: uid,
      createdAt: isoAt(now),
      expiresAt: isoAt(now + ctx.sessionTtlMs),
    });
    return { sessionsEnded, secret };
  });
}
