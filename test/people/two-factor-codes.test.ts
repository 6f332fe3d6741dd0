import test from 'ava';
import { randomBytes } from 'node:crypto';
import { Secret } from 'otpauth';
import {
  matchingStep,
  newTotpSecret,
  otpauthUri,
  sealTotpSecret,
  unsealTotpSecret,
} from '../../src/people/two-factor.js';

/**
 * Codes against the known answers of RFC 6238 Appendix B (SHA-1 seed "12345678901234567890";
 * our codes are the last 6 of its 8 digits), the drift window, and the seal of the secret.
 */
const RFC_SECRET = Secret.fromLatin1('12345678901234567890').base32;

const vectors: Array<[seconds: number, eightDigits: string]> = [
  [59, '94287082'],
  [1111111109, '07081804'],
  [1111111111, '14050471'],
  [1234567890, '89005924'],
  [2000000000, '69279037'],
  [20000000000, '65353130'],
];

test('RFC 6238 Appendix B: each code matches its own time step', (t) => {
  for (const [seconds, code] of vectors) {
    t.is(matchingStep(RFC_SECRET, code.slice(-6), seconds * 1000), Math.floor(seconds / 30), `T=${seconds}`);
  }
});

test('a code is good one step either side of the server clock, not two', (t) => {
  const code = '287082'; // step 1 (T=30..59)
  t.is(matchingStep(RFC_SECRET, code, 0), 1, 'one step early');
  t.is(matchingStep(RFC_SECRET, code, 89_000), 1, 'one step late');
  t.is(matchingStep(RFC_SECRET, code, 90_000), null, 'two steps late');
  t.is(matchingStep(RFC_SECRET, '287083', 59_000), null, 'another code');
  t.is(matchingStep(RFC_SECRET, '94287082', 59_000), null, 'eight digits are not six');
});

test('a new secret is 160 random bits, and its URI carries it', (t) => {
  const a = newTotpSecret();
  const b = newTotpSecret();
  t.regex(a, /^[A-Z2-7]{32}$/);
  t.not(a, b);
  t.is(Secret.fromBase32(a).bytes.length, 20);
  const uri = new URL(otpauthUri(a, 'someone@example.com'));
  t.is(uri.protocol, 'otpauth:');
  t.is(uri.searchParams.get('secret'), a);
  t.is(uri.searchParams.get('issuer'), 'svc');
  t.is(uri.searchParams.get('digits'), '6');
  t.is(uri.searchParams.get('period'), '30');
});

test('the sealed secret opens only with its master key and for its own person', (t) => {
  const master = randomBytes(32);
  const secret = newTotpSecret();
  const sealed = sealTotpSecret(master, 'usr_a', secret);
  t.false(sealed.includes(secret));
  t.is(Buffer.from(sealed, 'base64url').indexOf(Buffer.from(Secret.fromBase32(secret).bytes)), -1);
  t.not(sealTotpSecret(master, 'usr_a', secret), sealed, 'a fresh IV each time');
  t.is(unsealTotpSecret(master, 'usr_a', sealed), secret);
  t.throws(() => unsealTotpSecret(master, 'usr_b', sealed), { message: /cannot be unsealed/ });
  t.throws(() => unsealTotpSecret(randomBytes(32), 'usr_a', sealed), { message: /cannot be unsealed/ });
  const altered = Buffer.from(sealed, 'base64url');
  altered[14] = altered[14]! ^ 1;
  t.throws(() => unsealTotpSecret(master, 'usr_a', altered.toString('base64url')), { message: /cannot be unsealed/ });
  t.throws(() => unsealTotpSecret(master, 'usr_a', 'c2hvcnQ'), { message: /too short/ });
});
