import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import { sealBytes, unsealBytes } from '../lib/seal.js';

/**
 * Two-factor codes (TOTP, RFC 6238) and the sealing of their secrets.
 * Rules:
 * - A secret is 160 random bits (RFC 4226 section 4 recommends 160), HMAC-SHA1, 6 digits, 30 s
 *   steps: what every authenticator app reads from an otpauth URI.
 * - At rest the secret is sealed with AES-256-GCM under deriveKey(masterKey, 'totp'), bound to its
 *   person by the associated data: the store file never holds it in clear or in base32, and a
 *   sealed secret copied onto another person does not open.
 * - A code is good for its own step and one step either side (clock drift), and only for a step
 *   later than the last one accepted for that person (RFC 6238 section 5.2: once only). The
 *   callers keep that last step; `matchingStep` only says which step a code belongs to.
 * - Codes are compared in constant time (the library's timingSafeEqual).
 */

/** The issuer authenticator apps show beside the account (a constant: no setting for it yet). */
export const TOTP_ISSUER = 'svc';
export const TOTP_DIGITS = 6;
export const TOTP_PERIOD_SECONDS = 30;
/** Steps of clock drift allowed either side of the server's current step. */
export const TOTP_DRIFT_STEPS = 1;

const SECRET_BYTES = 20;
const PURPOSE = 'totp';

const aad = (uid: string) => `totp:${uid}`;

/** A new random secret (base32, as shown to the person once). */
export function newTotpSecret(): string {
  return new Secret({ buffer: new Uint8Array(randomBytes(SECRET_BYTES)).buffer }).base32;
}

/** The otpauth:// URI an authenticator app reads (usually from a QR code). */
export function otpauthUri(secretBase32: string, account: string): string {
  return new TOTP({
    issuer: TOTP_ISSUER,
    label: account,
    secret: Secret.fromBase32(secretBase32),
    algorithm: 'SHA1',
    digits: TOTP_DIGITS,
    period: TOTP_PERIOD_SECONDS,
  }).toString();
}

export function sealTotpSecret(masterKey: Buffer, uid: string, secretBase32: string): string {
  return sealBytes(masterKey, PURPOSE, aad(uid), Secret.fromBase32(secretBase32).bytes);
}

/** The secret in base32; throws when the master key is not the one that sealed it, or the record was altered. */
export function unsealTotpSecret(masterKey: Buffer, uid: string, sealed: string): string {
  try {
    const raw = unsealBytes(masterKey, PURPOSE, aad(uid), sealed);
    return new Secret({ buffer: new Uint8Array(raw).buffer }).base32;
  } catch (cause) {
    const why = /too short/.test((cause as Error).message)
      ? 'too short'
      : 'wrong master key, or the record was altered';
    throw new Error(`two-factor secret cannot be unsealed: ${why}`, { cause });
  }
}

/**
 * The time step a code belongs to, if it is the secret's code for the step at `nowMs` or one step
 * either side; otherwise null.
 */
export function matchingStep(secretBase32: string, code: string, nowMs: number): number | null {
  const secret = Secret.fromBase32(secretBase32);
  const options = { secret, algorithm: 'SHA1', digits: TOTP_DIGITS, period: TOTP_PERIOD_SECONDS };
  const delta = TOTP.validate({ ...options, token: code, timestamp: nowMs, window: TOTP_DRIFT_STEPS });
  if (delta === null) return null;
  return TOTP.counter({ period: TOTP_PERIOD_SECONDS, timestamp: nowMs }) + delta;
}

/**
 * Recovery codes: the way in when the authenticator is lost. Ten codes are shown once, when
 * two-factor is turned on (or the codes are replaced); each is 50 random bits written as two
 * groups of five lowercase base32 letters (`abcde-fghij`), taken in place of a code at sign-in,
 * and good once. Only their HMAC-SHA-256, under a key derived from the master key and bound to
 * the person, is stored: a copy of the store file without master.key cannot test guesses at them
 * (50 bits each would not hold against a fast hash alone), nor move them to another person.
 */
export const RECOVERY_CODE_COUNT = 10;
const RECOVERY_ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
const RECOVERY_SHAPE = /^[a-z2-7]{5}[- ]?[a-z2-7]{5}$/;

export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const bytes = randomBytes(10);
    const letters = [...bytes].map((b) => RECOVERY_ALPHABET[b & 31]).join('');
    return `${letters.slice(0, 5)}-${letters.slice(5)}`;
  });
}

/** Whether `code` is written as a recovery code (spaces and case aside), not a six-digit code. */
export function isRecoveryCode(code: string): boolean {
  return RECOVERY_SHAPE.test(code.trim().toLowerCase());
}

/**
 * The stored form of a person's recovery code (`key`: deriveKey(masterKey, 'recovery-codes')): the
 * same for `abcde-fghij`, `ABCDEFGHIJ` and ` abcde fghij`.
 */
export function recoveryCodeHash(key: Buffer, uid: string, code: string): string {
  const plain = code.toLowerCase().replace(/[\s-]/g, '');
  return createHmac('sha256', key).update(`${uid}:${plain}`).digest('hex');
}

/** The index of `code`'s hash among the person's `hashes`, compared in constant time; -1 when none. */
export function recoveryCodeIndex(key: Buffer, uid: string, hashes: readonly string[], code: string): number {
  const given = Buffer.from(recoveryCodeHash(key, uid, code), 'hex');
  let found = -1;
  hashes.forEach((h, i) => {
    const stored = Buffer.from(h, 'hex');
    if (stored.length === given.length && timingSafeEqual(stored, given) && found === -1) found = i;
  });
  return found;
}
