import QRCode from 'qrcode';
import { AppError, invalidField } from '../errors/app-error.js';
import { isoAt } from '../lib/clock.js';
import type { PeopleContext } from './context.js';
import { cleared, type Account } from './lockouts.js';
import { wrongCode } from './refusals.js';
import { freshStep } from './second-factor.js';
import {
  isRecoveryCode,
  newRecoveryCodes,
  newTotpSecret,
  otpauthUri,
  recoveryCodeHash,
  recoveryCodeIndex,
  sealTotpSecret,
} from './two-factor.js';
import { totpOn } from './views.js';

/**
 * A person's two-factor sign-in, turned on and off. Two-factor is on only after a code confirms
 * the enrolment; turning it off needs a code (or a recovery code). Starting an enrolment while it
 * is on is refused (a stolen session cannot swap the secret). Each code is an attempt, counted
 * before it is checked (lockouts.ts), and spent in the write that uses it.
 */

/**
 * Starts a two-factor enrolment: a new secret, sealed in the store and answered once. Until a
 * code confirms it, sign-in does not ask for codes; a new start replaces a waiting one.
 */
export async function startTotp(
  ctx: PeopleContext,
  uid: string,
): Promise<{ secret: string; otpauthUri: string; qrSvg: string }> {
  const { store, repo } = ctx;
  const user = await repo.getUser(uid);
  if (!user) throw new AppError('unauthenticated');
  const secret = newTotpSecret();
  const sealed = sealTotpSecret(ctx.masterKey, uid, secret);
  await store.write(async () => {
    const latest = await repo.getUser(uid);
    if (!latest) throw new AppError('unauthenticated');
    if (totpOn(latest)) {
      throw invalidField(null, 'two-factor is already on: turn it off first (DELETE /api/me/totp with a code)');
    }
    await repo.putUser({ ...latest, totp: { sealed, confirmedAt: null } });
  });
  const uri = otpauthUri(secret, user.email);
  // The same URI as a QR code (an SVG image) for an authenticator app's camera.
  const qrSvg = await QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
  return { secret, otpauthUri: uri, qrSvg };
}

/** A current code of the waiting enrolment turns two-factor on (and is spent); the recovery codes, shown once. */
export async function confirmTotp(
  ctx: PeopleContext,
  uid: string,
  code: string,
): Promise<{ totp: true; recoveryCodes: string[] }> {
  const { store, repo, clock, lockouts, recoveryKey } = ctx;
  const user = await repo.getUser(uid);
  if (!user) throw new AppError('unauthenticated');
  if (!user.totp) throw invalidField(null, 'no two-factor enrolment is waiting: start one with POST /api/me/totp');
  if (totpOn(user)) throw invalidField(null, 'two-factor is already on');
  const attempt = await lockouts.take(uid, 'totp');
  const step = freshStep(ctx, user, code);
  if (step === null) throw lockouts.refusal(attempt, wrongCode);
  const recoveryCodes = newRecoveryCodes();
  await store.write(async () => {
    const latest = await repo.getUser(uid);
    // Another enrolment started meanwhile: this code belongs to a secret no longer waiting.
    if (!latest?.totp || latest.totp.sealed !== user.totp!.sealed || totpOn(latest)) throw wrongCode();
    await repo.putUser(
      cleared(
        {
          ...latest,
          totp: {
            sealed: latest.totp.sealed,
            confirmedAt: isoAt(clock.now()),
            lastStep: step,
            recovery: recoveryCodes.map((c) => recoveryCodeHash(recoveryKey, uid, c)),
          },
        },
        ['totp'],
      ),
    );
  });
  // Shown this once: only their hashes are kept.
  return { totp: true, recoveryCodes };
}

/**
 * New recovery codes in place of the old ones (all of them, used or not), for a person with
 * two-factor on and a current code; shown this once.
 */
export async function replaceRecoveryCodes(
  ctx: PeopleContext,
  uid: string,
  code: string,
): Promise<{ recoveryCodes: string[] }> {
  const { store, repo, lockouts, recoveryKey } = ctx;
  const user = await repo.getUser(uid);
  if (!user) throw new AppError('unauthenticated');
  if (!totpOn(user)) throw invalidField(null, 'two-factor is not on: turn it on first (POST /api/me/totp)');
  const attempt = await lockouts.take(uid, 'totp');
  const step = freshStep(ctx, user, code);
  if (step === null) throw lockouts.refusal(attempt, wrongCode);
  const recoveryCodes = newRecoveryCodes();
  await store.write(async () => {
    const latest = await repo.getUser(uid);
    if (!latest?.totp || latest.totp.sealed !== user.totp!.sealed || step <= (latest.totp.lastStep ?? -1))
      throw wrongCode();
    await repo.putUser(
      cleared(
        {
          ...latest,
          totp: {
            ...latest.totp,
            lastStep: step,
            recovery: recoveryCodes.map((c) => recoveryCodeHash(recoveryKey, uid, c)),
          },
        },
        ['totp'],
      ),
    );
  });
  return { recoveryCodes };
}

/** Turns two-factor off (or drops a waiting enrolment); needs a current, unused code or a recovery code. */
export async function disableTotp(ctx: PeopleContext, uid: string, code: string): Promise<{ totp: false }> {
  const { store, repo, lockouts, recoveryKey } = ctx;
  const user = await repo.getUser(uid);
  if (!user) throw new AppError('unauthenticated');
  if (!user.totp) throw invalidField(null, 'two-factor is not on');
  const attempt = await lockouts.take(uid, 'totp');
  // A recovery code turns it off too (the authenticator lost), spent with it.
  const recovery = isRecoveryCode(code) ? recoveryCodeHash(recoveryKey, uid, code) : null;
  const step = recovery === null ? freshStep(ctx, user, code) : null;
  if (recovery !== null ? recoveryCodeIndex(recoveryKey, uid, user.totp.recovery ?? [], code) === -1 : step === null)
    throw lockouts.refusal(attempt, wrongCode);
  await store.write(async () => {
    const latest = await repo.getUser(uid);
    if (!latest?.totp || latest.totp.sealed !== user.totp!.sealed) throw wrongCode();
    if (recovery !== null ? !(latest.totp.recovery ?? []).includes(recovery) : step! <= (latest.totp.lastStep ?? -1))
      throw wrongCode();
    const { totp: _off, ...rest } = latest as Account;
    await repo.putUser(cleared(rest, ['totp']));
  });
  return { totp: false };
}
