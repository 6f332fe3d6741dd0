import test from 'ava';
import { createHmac, sign, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { signReceipt, type ReceiptClaims } from '../../src/receipts/crypto.js';
import { generateSigningKey, toJwks, unsealPrivateKey } from '../../src/signing/crypto.js';
import { verifyReceipt, type VerifyKeys } from '../../src/receipts/verify.js';
import { ledgerKey, otherKey, receiptKey } from '../fixtures/receipts/test-keys.js';

/**
 * Receipt verification. First as a merchant does it, with jose and the published key set alone
 * (no product code); then verifyReceipt against every way a receipt can be wrong. Tokens that
 * the product would never sign are built by hand.
 */

const fixture = (name: string) => readFileSync(new URL(`../fixtures/receipts/${name}`, import.meta.url), 'utf8');
const jwks = JSON.parse(fixture('jwks.json')) as { keys: Array<Record<string, unknown>> };
const otherJwks = JSON.parse(fixture('other-jwks.json')) as { keys: unknown[] };
const claims = JSON.parse(fixture('golden-claims.json')) as ReceiptClaims;
const golden = fixture('golden-receipt.jwt').trim();
const KEYS: VerifyKeys = { jwks };
/** 2026-06-01: after the golden receipt's iat, long before its exp. */
const NOW = Date.UTC(2026, 5, 1);
const receipt = receiptKey();

const b64 = (value: unknown) =>
  Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
/** A token from any header and payload, signed by `key` (Ed25519) or with the signature given. */
function forge(header: unknown, payload: unknown, key: KeyObject | string): string {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${typeof key === 'string' ? key : sign(null, Buffer.from(input), key).toString('base64url')}`;
}
const header = (extra: Record<string, unknown> = {}) => ({ alg: 'EdDSA', kid: receipt.kid, typ: 'JWT', ...extra });
const invalid = (reason: string, kid: string | null = receipt.kid) => ({ valid: false, claims: null, reason, kid });

test('a merchant verifies the golden receipt with jose and the published key set alone', async (t) => {
  // Nothing from src/ here: what a merchant's code would be, given the deployment's jwks.json.
  const keySet = createLocalJWKSet(jwks as Parameters<typeof createLocalJWKSet>[0]);
  const { payload, protectedHeader } = await jwtVerify(golden, keySet, {
    algorithms: ['EdDSA'],
    issuer: 'https://svc.example',
    currentDate: new Date(NOW),
  });
  t.deepEqual(protectedHeader, { alg: 'EdDSA', kid: jwks.keys[0]!.kid, typ: 'JWT' });
  t.deepEqual(payload, claims as unknown as typeof payload);
  t.is(payload.amt, 1250);
  t.is(payload.cur, 'EUR');

  // The same merchant code refuses a token signed with the ledger key (published with use
  // "ledger"), a changed amount, and alg "none".
  const ledger = ledgerKey();
  const ledgerSigned = forge({ alg: 'EdDSA', kid: ledger.kid, typ: 'JWT' }, claims, ledger.privateKey);
  await t.throwsAsync(jwtVerify(ledgerSigned, keySet, { algorithms: ['EdDSA'], currentDate: new Date(NOW) }), {
    code: 'ERR_JWKS_NO_MATCHING_KEY',
  });
  const [h, , s] = golden.split('.');
  await t.throwsAsync(
    jwtVerify(`${h}.${b64({ ...claims, amt: 125000 })}.${s}`, keySet, {
      algorithms: ['EdDSA'],
      currentDate: new Date(NOW),
    }),
    { code: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' },
  );
  await t.throwsAsync(
    jwtVerify(forge({ alg: 'none' }, claims, ''), keySet, { algorithms: ['EdDSA'], currentDate: new Date(NOW) }),
  );
});

test('the golden receipt is valid, with its claims and kid', async (t) => {
  t.deepEqual(await verifyReceipt(golden, KEYS, NOW), { valid: true, claims, reason: null, kid: receipt.kid });
});

test('a receipt signed by the product (signReceipt) verifies; extra claims are ignored, not returned', async (t) => {
  const token = signReceipt(receipt.privateKey, receipt.kid, { ...claims, extra: 'x' } as ReceiptClaims);
  t.deepEqual(await verifyReceipt(token, KEYS, NOW), { valid: true, claims, reason: null, kid: receipt.kid });
});

test("with the product's own key set: a retired key still verifies; a revoked one is unpublished and answers revoked", async (t) => {
  const master = Buffer.alloc(32, 3);
  const current = generateSigningKey(master, 'receipt', NOW);
  const ledger = generateSigningKey(master, 'ledger', NOW);
  const sealed = (record: typeof current) => signReceipt(unsealPrivateKey(record, master), record.kid, claims);
  const retired = { ...current, retiredAt: '2026-03-01T00:00:00.000Z' };
  t.true((await verifyReceipt(sealed(current), { jwks: toJwks([retired, ledger]) }, NOW)).valid);
  t.deepEqual(
    await verifyReceipt(sealed(ledger), { jwks: toJwks([retired, ledger]) }, NOW),
    invalid('unknown_key', ledger.kid),
  );
  const revoked = { ...current, revokedAt: '2026-04-01T00:00:00.000Z' };
  const records = [revoked, ledger];
  const revokedKids = new Set(records.filter((r) => r.revokedAt).map((r) => r.kid));
  t.deepEqual(
    await verifyReceipt(sealed(current), { jwks: toJwks(records), revokedKids }, NOW),
    invalid('revoked', current.kid),
  );
  t.deepEqual(
    await verifyReceipt(sealed(current), { jwks: toJwks(records) }, NOW),
    invalid('unknown_key', current.kid),
    'offline, a revoked key is simply gone',
  );
});

test('a changed payload or signature: bad_signature', async (t) => {
  const [h, p, s] = golden.split('.') as [string, string, string];
  for (const changed of [{ amt: 125000 }, { hum: true }, { mer: 'evil.example' }, { exp: 4102444801 }]) {
    t.deepEqual(
      await verifyReceipt(`${h}.${b64({ ...claims, ...changed })}.${s}`, KEYS, NOW),
      invalid('bad_signature'),
      JSON.stringify(changed),
    );
  }
  const flipped = Buffer.from(s, 'base64url');
  flipped[10] = flipped[10]! ^ 0x01;
  t.deepEqual(await verifyReceipt(`${h}.${p}.${flipped.toString('base64url')}`, KEYS, NOW), invalid('bad_signature'));
  // The payload of another valid receipt under the golden signature.
  const otherPayload = signReceipt(receipt.privateKey, receipt.kid, { ...claims, amt: 1 }).split('.')[1];
  t.deepEqual(await verifyReceipt(`${h}.${otherPayload}.${s}`, KEYS, NOW), invalid('bad_signature'));
});

test('a signature spelled another way (spare bits of the last character) is refused', async (t) => {
  const [h, p, s] = golden.split('.') as [string, string, string];
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const last = alphabet.indexOf(s.at(-1)!);
  const respelled = `${s.slice(0, -1)}${alphabet[last ^ 0x01]}`;
  t.deepEqual(Buffer.from(respelled, 'base64url'), Buffer.from(s, 'base64url'), 'the same bytes to a lenient decoder');
  t.deepEqual(await verifyReceipt(`${h}.${p}.${respelled}`, KEYS, NOW), invalid('malformed'));
});

test('a kid not in the set, or no kid: unknown_key', async (t) => {
  t.deepEqual(await verifyReceipt(golden, { jwks: otherJwks as VerifyKeys['jwks'] }, NOW), invalid('unknown_key'));
  t.deepEqual(await verifyReceipt(golden, { jwks: { keys: [] } }, NOW), invalid('unknown_key'));
  const other = otherKey();
  t.deepEqual(
    await verifyReceipt(forge(header({ kid: other.kid }), claims, other.privateKey), KEYS, NOW),
    invalid('unknown_key', other.kid),
  );
  t.deepEqual(
    await verifyReceipt(forge({ alg: 'EdDSA', typ: 'JWT' }, claims, receipt.privateKey), KEYS, NOW),
    invalid('unknown_key', null),
  );
  // A right key under a wrong kid is not looked up by its key material.
  t.deepEqual(
    await verifyReceipt(forge(header({ kid: 'not-a-kid' }), claims, receipt.privateKey), KEYS, NOW),
    invalid('unknown_key', 'not-a-kid'),
  );
});

test('only keys published with use "sig" verify: a ledger-signed token is unknown_key, even under a kid the set holds', async (t) => {
  const ledger = ledgerKey();
  const ledgerSigned = signReceipt(ledger.privateKey, ledger.kid, claims);
  t.deepEqual(await verifyReceipt(ledgerSigned, KEYS, NOW), invalid('unknown_key', ledger.kid));
  // The same receipt key published without use, with another use, alg or key_ops: not a receipt key.
  const base = jwks.keys[0]!;
  const { use: _use, ...noUse } = base;
  for (const variant of [
    noUse,
    { ...base, use: 'ledger' },
    { ...base, use: 'enc' },
    { ...base, alg: 'ES256' },
    { ...base, key_ops: ['sign'] },
    { ...base, crv: 'Ed448' },
    { ...base, kty: 'EC' },
  ]) {
    t.deepEqual(
      await verifyReceipt(golden, { jwks: { keys: [variant] } }, NOW),
      invalid('unknown_key'),
      JSON.stringify(variant),
    );
  }
  t.true((await verifyReceipt(golden, { jwks: { keys: [{ ...base, key_ops: ['verify'] }] } }, NOW)).valid);
});

test('alg none, HS256 (keyed with the public key), RS256, ES256 and the fully-specified "Ed25519": all invalid', async (t) => {
  const [, , s] = golden.split('.') as [string, string, string];
  for (const token of [
    forge(header({ alg: 'none' }), claims, ''),
    forge(header({ alg: 'none' }), claims, s),
    forge({ alg: 'none' }, claims, ''),
  ]) {
    const result = await verifyReceipt(token, KEYS, NOW);
    t.false(result.valid);
    t.is(result.reason, 'bad_signature');
  }
  const hsInput = `${b64(header({ alg: 'HS256' }))}.${b64(claims)}`;
  for (const secret of [
    Buffer.from(receipt.x, 'base64url'),
    Buffer.from(receipt.x),
    Buffer.from(JSON.stringify(jwks.keys[0])),
  ]) {
    const hs = `${hsInput}.${createHmac('sha256', secret).update(hsInput).digest('base64url')}`;
    t.deepEqual(await verifyReceipt(hs, KEYS, NOW), invalid('bad_signature'));
  }
  for (const alg of ['RS256', 'ES256', 'PS256', 'Ed25519', 'EDDSA', 'eddsa', '']) {
    t.deepEqual(
      await verifyReceipt(forge(header({ alg }), claims, receipt.privateKey), KEYS, NOW),
      invalid('bad_signature'),
      alg,
    );
  }
  t.deepEqual(
    await verifyReceipt(forge({ kid: receipt.kid, typ: 'JWT' }, claims, receipt.privateKey), KEYS, NOW),
    invalid('bad_signature'),
  );
});

test('expired: at and after exp, with no leeway; never for a forged token', async (t) => {
  const exp = 1780000000;
  const token = signReceipt(receipt.privateKey, receipt.kid, { ...claims, exp });
  t.true((await verifyReceipt(token, KEYS, exp * 1000 - 1)).valid);
  t.deepEqual(await verifyReceipt(token, KEYS, exp * 1000), invalid('expired'));
  t.deepEqual(await verifyReceipt(token, KEYS, exp * 1000 + 60_000), invalid('expired'));
  t.deepEqual(await verifyReceipt(token, KEYS, Number.NaN), invalid('expired'), 'a broken clock fails closed');
  const forged = forge(header(), { ...claims, exp }, otherKey().privateKey);
  t.deepEqual(await verifyReceipt(forged, KEYS, exp * 1000 + 60_000), invalid('bad_signature'));
  t.deepEqual(
    await verifyReceipt(forge(header(), { ...claims, exp }, ''), KEYS, exp * 1000 + 60_000),
    invalid('malformed'),
  );
});

test('revoked: a kid in revokedKids, whether or not the set still holds it; a forgery under it is bad_signature', async (t) => {
  const revokedKids = new Set([receipt.kid]);
  t.deepEqual(await verifyReceipt(golden, { jwks, revokedKids }, NOW), invalid('revoked'));
  t.deepEqual(
    await verifyReceipt(golden, { jwks: { keys: jwks.keys.slice(1) }, revokedKids }, NOW),
    invalid('revoked'),
  );
  const forged = forge(header(), claims, otherKey().privateKey);
  t.deepEqual(await verifyReceipt(forged, { jwks, revokedKids }, NOW), invalid('bad_signature'));
  t.true((await verifyReceipt(golden, { jwks, revokedKids: new Set(['another']) }, NOW)).valid);
});

test('malformed: not a compact JWS, not JSON, oversize, extensions, or claims missing or of the wrong type', async (t) => {
  const [h, p, s] = golden.split('.') as [string, string, string];
  const garbage = [
    '',
    'garbage',
    'a.b',
    'a.b.c.d',
    '..',
    `${h}..${s}`,
    `.${p}.${s}`,
    `${golden} `,
    ` ${golden}`,
    `${golden}\n`,
    `${h}.${p}.${s}.`,
    `${h}.${p}+.${s}`,
    `${b64('not json')}.${p}.${s}`,
    `${b64([1, 2])}.${p}.${s}`,
    `${b64('null')}.${p}.${s}`,
    `${h}.${b64('[]')}.${s}`,
    `${h}.${b64('"x"')}.${s}`,
    `${Buffer.from([0xff, 0xfe]).toString('base64url')}.${p}.${s}`,
    `${h}.${p}.${s}${'A'.repeat(8192)}`,
    'é.é.é',
  ];
  for (const token of garbage)
    t.deepEqual((await verifyReceipt(token, KEYS, NOW)).reason, 'malformed', JSON.stringify(token.slice(0, 60)));
  for (const token of [undefined, null, 42, {}, [golden], Buffer.from(golden)]) {
    t.deepEqual(await verifyReceipt(token as unknown as string, KEYS, NOW), invalid('malformed', null));
  }
  const signed = (payload: unknown, extra: Record<string, unknown> = {}) =>
    forge(header(extra), payload, receipt.privateKey);
  const { hum: _hum, ...noHum } = claims;
  const badClaims = [
    noHum,
    { ...claims, amt: 0 },
    { ...claims, amt: -5 },
    { ...claims, amt: 12.5 },
    { ...claims, amt: '1250' },
    { ...claims, amt: 2 ** 53 },
    { ...claims, cur: 'eur' },
    { ...claims, cur: 'EURO' },
    { ...claims, cur: 978 },
    { ...claims, hum: 'false' },
    { ...claims, hum: 0 },
    { ...claims, sub: 7 },
    { ...claims, act: null },
    { ...claims, typ: '' },
    { ...claims, mer: ['a'] },
    { ...claims, iat: 1.5 },
    { ...claims, exp: '4102444800' },
    { ...claims, exp: -1 },
  ];
  for (const payload of badClaims)
    t.deepEqual(await verifyReceipt(signed(payload), KEYS, NOW), invalid('malformed'), JSON.stringify(payload));
  for (const extra of [{ crit: ['exp'], exp: 1 }, { b64: false, crit: ['b64'] }, { b64: true }]) {
    t.deepEqual(await verifyReceipt(signed(claims, extra), KEYS, NOW), invalid('malformed'), JSON.stringify(extra));
  }
  // At the limit a receipt is judged on its merits; one character over, it is malformed.
  let n = 5000;
  while (signed({ ...claims, pad: 'x'.repeat(n + 1) }).length <= 8192) n++;
  const largest = signed({ ...claims, pad: 'x'.repeat(n) });
  t.true(largest.length <= 8192 && largest.length > 8180, String(largest.length));
  t.true((await verifyReceipt(largest, KEYS, NOW)).valid);
  t.deepEqual(
    await verifyReceipt(signed({ ...claims, pad: 'x'.repeat(n + 1) }), KEYS, NOW),
    invalid('malformed', null),
  );
  t.deepEqual(await verifyReceipt(`${h}.${p}.${s}`.padEnd(8193, 'A'), KEYS, NOW), invalid('malformed', null));
});

test('a broken key set never throws: unknown_key', async (t) => {
  const sets = [
    {
      keys: [
        null,
        1,
        'x',
        [],
        { kty: 'OKP', crv: 'Ed25519', kid: receipt.kid, use: 'sig', x: 'zz' },
        { kty: 'OKP', crv: 'Ed25519', kid: receipt.kid, use: 'sig', x: 5 },
      ],
    },
    { keys: 'nope' },
    null,
    undefined,
    {},
  ];
  for (const set of sets) {
    t.deepEqual(
      await verifyReceipt(golden, { jwks: set } as unknown as VerifyKeys, NOW),
      invalid('unknown_key'),
      JSON.stringify(set),
    );
  }
  t.deepEqual(await verifyReceipt(golden, undefined as unknown as VerifyKeys, NOW), invalid('unknown_key'));
});

test('property: any string is never valid and never throws', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        fc.string(),
        fc.string({ unit: fc.constantFrom(...'ABCDEFabcdef0123456789-_.') }),
        fc.string({ unit: 'binary' }),
      ),
      async (token) => {
        const result = await verifyReceipt(token, KEYS, NOW);
        return !result.valid && result.claims === null && typeof result.reason === 'string';
      },
    ),
    { numRuns: 2000 },
  );
  t.pass();
});

test('property: any single-character change of the golden receipt is never valid', async (t) => {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ é';
  const mutation = fc.record({
    at: fc.nat({ max: golden.length - 1 }),
    to: fc.constantFrom(...alphabet),
    how: fc.constantFrom('replace', 'insert', 'delete'),
  });
  await fc.assert(
    fc.asyncProperty(mutation, async ({ at, to, how }) => {
      const token =
        how === 'delete'
          ? golden.slice(0, at) + golden.slice(at + 1)
          : how === 'insert'
            ? golden.slice(0, at) + to + golden.slice(at)
            : golden.slice(0, at) + to + golden.slice(at + 1);
      if (token === golden) return true;
      const result = await verifyReceipt(token, KEYS, NOW);
      return !result.valid && result.claims === null;
    }),
    {
      numRuns: 3000,
      examples: [
        [{ at: golden.length - 1, to: 'B', how: 'replace' }],
        [{ at: golden.length - 1, to: 'A', how: 'replace' }],
      ],
    },
  );
  t.pass();
});
