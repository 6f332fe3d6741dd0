import { randomBytes } from 'node:crypto';

/**
 * User codes of the device authorization grant (RFC 8628 6.1): what a person reads off a terminal
 * and types into the console.
 * Rules:
 * - Eight letters from twenty consonants without vowels (no words, no 0/O or 1/I to confuse),
 *   about 34.6 bits; shown as two groups of four, `BCDF-GHJK`.
 * - What a person types is read case-insensitively, with spaces and dashes ignored; anything
 *   else (another letter, a digit, more or fewer than eight letters) is not a user code.
 * - Drawn without bias: bytes of 240 and above (256 is not a multiple of 20) are drawn again.
 */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
export const USER_CODE_LENGTH = 8;
const LIMIT = 256 - (256 % USER_CODE_ALPHABET.length);

/** A new user code, normalised (eight letters, no dash). */
export function newUserCode(random: (n: number) => Buffer = randomBytes): string {
  let code = '';
  while (code.length < USER_CODE_LENGTH) {
    for (const byte of random(USER_CODE_LENGTH * 2)) {
      if (byte >= LIMIT) continue;
      code += USER_CODE_ALPHABET[byte % USER_CODE_ALPHABET.length];
      if (code.length === USER_CODE_LENGTH) break;
    }
  }
  return code;
}

/**
 * The user code a person typed, normalised, or null when it cannot be one.
 *
 * @example
 * normalizeUserCode(' bcdf-ghjk ') // 'BCDFGHJK'
 * normalizeUserCode('BCDF-GHJ0') // null
 */
export function normalizeUserCode(input: string): string | null {
  if (input.length > 64) return null;
  const letters = input.replace(/[\s-]/g, '').toUpperCase();
  if (letters.length !== USER_CODE_LENGTH) return null;
  for (const c of letters) if (!USER_CODE_ALPHABET.includes(c)) return null;
  return letters;
}

/** As a person reads it: `BCDF-GHJK`. */
export function formatUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}
