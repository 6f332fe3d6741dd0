import type { UserRecord } from './records.js';
import type { PeopleContext } from './context.js';
import { totpRequired, USED_CODE } from './refusals.js';
import { isRecoveryCode, matchingStep, recoveryCodeHash, recoveryCodeIndex, unsealTotpSecret } from './two-factor.js';
import { totpOn } from './views.js';

/** The second factor a sign-in gave: a code's time step, or a recovery code (its hash). */
export type SecondFactor = { step: number } | { recovery: string };

/** The step a code of this person's secret matches now and that was not used yet, or null. */
export function freshStep(
  ctx: Pick<PeopleContext, 'masterKey' | 'clock'>,
  user: UserRecord,
  code: string,
): number | null {
  if (!user.totp) return null;
  const step = matchingStep(unsealTotpSecret(ctx.masterKey, user.id, user.totp.sealed), code, ctx.clock.now());
  return step !== null && step > (user.totp.lastStep ?? -1) ? step : null;
}

/**
 * Sign-in's second factor, once the password was right: the step the code used, or the recovery
 * code's hash. A code is an attempt at the account's two-factor, counted before it is checked.
 */
export async function signInStep(
  ctx: PeopleContext,
  user: UserRecord,
  code: string | undefined,
): Promise<SecondFactor | null> {
  if (!totpOn(user)) return null;
  if (code === undefined) throw totpRequired('This account needs a two-factor code: send it as totp.');
  const attempt = await ctx.lockouts.take(user.id, 'totp');
  // A recovery code goes where the code goes (two-factor.ts), and is good once.
  if (isRecoveryCode(code)) {
    if (recoveryCodeIndex(ctx.recoveryKey, user.id, user.totp!.recovery ?? [], code) === -1)
      throw ctx.lockouts.refusal(attempt, (left) => totpRequired(USED_CODE, left));
    return { recovery: recoveryCodeHash(ctx.recoveryKey, user.id, code) };
  }
  const step = freshStep(ctx, user, code);
  if (step === null) throw ctx.lockouts.refusal(attempt, (left) => totpRequired(USED_CODE, left));
  return { step };
}
