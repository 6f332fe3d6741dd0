import { AppError } from '../errors/app-error.js';

/** The people service's refusals, worded once: each names what was wrong and, when counted, the attempts left. */

/** `400 invalid_request` naming one field, saying how many attempts are left before a lockout. */
export function wrongSecret(field: string, message: string, attemptsLeft?: number): AppError {
  return new AppError('invalid_request', {
    details: { errors: [{ field, message }], ...(attemptsLeft === undefined ? {} : { attemptsLeft }) },
  });
}

export function notCurrentPassword(attemptsLeft?: number): AppError {
  return wrongSecret('currentPassword', '"currentPassword" is not the current password', attemptsLeft);
}

/** A wrong email and a wrong password: the same answer. */
export function wrongCredentials(): AppError {
  return new AppError('unauthenticated', {
    message: 'The email or password is wrong.',
    fix: 'Check the email and password and sign in again.',
  });
}

export function totpRequired(message: string, attemptsLeft?: number): AppError {
  return new AppError('totp_required', {
    message,
    ...(attemptsLeft === undefined ? {} : { details: { attemptsLeft } }),
  });
}

export function wrongCode(attemptsLeft?: number): AppError {
  return wrongSecret('code', '"code" is not the current code of your authenticator', attemptsLeft);
}

export const USED_CODE = 'The two-factor code is wrong, or was used already.';

/** A person still holding a password someone else chose may do nothing in a workspace. */
export function oneTimePasswordFirst(): AppError {
  return new AppError('forbidden', {
    message: 'Change the one-time password first.',
    fix: 'Send PUT /api/me/password with currentPassword and a newPassword of your own.',
  });
}
