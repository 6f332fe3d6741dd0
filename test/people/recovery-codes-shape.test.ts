import test from 'ava';
import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import { isRecoveryCode, newRecoveryCodes, recoveryCodeHash, recoveryCodeIndex } from '../../src/people/two-factor.js';

const KEY = randomBytes(32);

/**
 * The recovery code reader: every new code reads back however a person types it (case, a space
 * or no dash), to the same stored hash; nothing else is read as one (six-digit codes, other text).
 */
const variants = (code: string) => [code, code.toUpperCase(), code.replace('-', ''), code.replace('-', ' ')];

test('a new code reads back however it is typed, to its own hash and no other', (t) => {
  fc.assert(
    fc.property(fc.constant(null), () => {
      const codes = newRecoveryCodes();
      const hashes = codes.map((c) => recoveryCodeHash(KEY, 'usr_a', c));
      codes.forEach((code, i) => {
        for (const typed of variants(code)) {
          t.true(isRecoveryCode(typed), typed);
          t.is(recoveryCodeIndex(KEY, 'usr_a', hashes, typed), i);
          t.is(recoveryCodeIndex(KEY, 'usr_b', hashes, typed), -1, "another person's codes are not theirs");
          t.is(recoveryCodeIndex(randomBytes(32), 'usr_a', hashes, typed), -1, 'nor under another key');
        }
      });
    }),
    { numRuns: 50 },
  );
});

test('text that is not a recovery code is not read as one', (t) => {
  fc.assert(
    fc.property(fc.string({ maxLength: 40 }), (text) => {
      const shaped = /^[a-z2-7]{5}[- ]?[a-z2-7]{5}$/i.test(text.trim());
      t.is(isRecoveryCode(text), shaped);
    }),
  );
  for (const code of ['123456', '12345678', 'abcde-fghi', 'abcde--fghij', 'abcd1-fghij', ''])
    t.false(isRecoveryCode(code), code);
  t.is(recoveryCodeIndex(KEY, 'usr_a', [], 'abcde-fghij'), -1);
});
