import test from 'ava';
import { createPublicKey, sign, verify } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { calculateJwkThumbprint } from 'jose';
import {
  generateSigningKey,
  publicKeyOf,
  toJwks,
  unsealPrivateKey,
  type SigningKeyRecord,
} from '../../src/signing/crypto.js';
import { ledgerKey, receiptKey } from '../fixtures/receipts/test-keys.js';

/**
 * The service's signing keys: a new key's kid is its RFC 7638 thumbprint; sealing refuses a
 * wrong master key and any changed byte; the published key set holds every key not revoked, by
 * use. Receipt signing with them: test/receipts/crypto.test.ts.
 */

const fixture = (name: string) => readFile(new URL(`../fixtures/receipts/${name}`, import.meta.url), 'utf8');
const MASTER = Buffer.alloc(32, 7);
const OTHER_MASTER = Buffer.alloc(32, 8);
const NOW = Date.UTC(2026, 0, 2, 3, 4, 5);
const UNSEAL = /^signing key cannot be unsealed/;

test('generateSigningKey: an Ed25519 key whose kid is its RFC 7638 thumbprint, sealed, dated, in use', async (t) => {
  for (const use of ['receipt', 'ledger'] as const) {
    const record = generateSigningKey(MASTER, use, NOW);
    t.is(record.use, use);
    t.deepEqual(Object.keys(record.publicJwk), ['kty', 'crv', 'x']);
    t.like(record.publicJwk, { kty: 'OKP', crv: 'Ed25519' });
    t.is(Buffer.from(record.publicJwk.x, 'base64url').length, 32);
    t.is(record.kid, await calculateJwkThumbprint(record.publicJwk, 'sha256'));
    t.is(record.createdAt, '2026-01-02T03:04:05.000Z');
    t.is(record.retiredAt, null);
    t.is(record.revokedAt, null);
    t.is(Buffer.from(record.sealedPrivateKey, 'base64url').length, 12 + 48 + 16, 'iv, PKCS#8 DER of 48 bytes, tag');
  }
  const a = generateSigningKey(MASTER, 'receipt', NOW);
  const b = generateSigningKey(MASTER, 'receipt', NOW);
  t.not(a.kid, b.kid);
  t.not(a.sealedPrivateKey.slice(0, 16), b.sealedPrivateKey.slice(0, 16), 'a fresh IV each time');
  t.throws(() => generateSigningKey(MASTER, 'payments' as 'receipt', NOW), { instanceOf: TypeError });
});

test('seal and unseal round trip: the unsealed key signs what publicKeyOf verifies', (t) => {
  const record = generateSigningKey(MASTER, 'receipt', NOW);
  const privateKey = unsealPrivateKey(record, MASTER);
  t.is(privateKey.type, 'private');
  t.is(privateKey.asymmetricKeyType, 'ed25519');
  const message = Buffer.from('a receipt');
  t.true(verify(null, message, publicKeyOf(record), sign(null, message, privateKey)));
  t.is(createPublicKey(privateKey).export({ format: 'jwk' }).x, record.publicJwk.x);
  t.is(publicKeyOf(record).export({ format: 'jwk' }).x, record.publicJwk.x);
});

test('unseal refuses a wrong master key', (t) => {
  const record = generateSigningKey(MASTER, 'receipt', NOW);
  t.throws(() => unsealPrivateKey(record, OTHER_MASTER), { message: UNSEAL });
});

test('unseal refuses a flipped bit anywhere in the sealed key (IV, ciphertext, tag), and a cut one', (t) => {
  const record = generateSigningKey(MASTER, 'ledger', NOW);
  const sealed = Buffer.from(record.sealedPrivateKey, 'base64url');
  for (let i = 0; i < sealed.length; i++) {
    const changed = Buffer.from(sealed);
    changed[i] = changed[i]! ^ 0x01;
    t.throws(
      () => unsealPrivateKey({ ...record, sealedPrivateKey: changed.toString('base64url') }, MASTER),
      { message: UNSEAL },
      `byte ${i}`,
    );
  }
  for (const cut of [sealed.subarray(0, sealed.length - 1), sealed.subarray(0, 28), Buffer.alloc(0)]) {
    t.throws(() => unsealPrivateKey({ ...record, sealedPrivateKey: cut.toString('base64url') }, MASTER), {
      message: UNSEAL,
    });
  }
  t.throws(() => unsealPrivateKey({ ...record, sealedPrivateKey: `${record.sealedPrivateKey}=` }, MASTER), {
    message: UNSEAL,
  });
});

test('unseal refuses a record whose kid, use or public key was changed', (t) => {
  const record = generateSigningKey(MASTER, 'receipt', NOW);
  const other = generateSigningKey(MASTER, 'receipt', NOW);
  const altered: SigningKeyRecord[] = [
    { ...record, use: 'ledger' },
    { ...record, kid: other.kid },
    { ...record, publicJwk: other.publicJwk },
    { ...record, publicJwk: other.publicJwk, kid: other.kid },
    { ...other, sealedPrivateKey: record.sealedPrivateKey },
  ];
  for (const bad of altered) t.throws(() => unsealPrivateKey(bad, MASTER), { message: UNSEAL });
  t.notThrows(() => unsealPrivateKey(record, MASTER));
});

test('toJwks publishes every key not revoked: receipt keys as use "sig", ledger keys as use "ledger"', (t) => {
  const receipt = generateSigningKey(MASTER, 'receipt', NOW);
  const retired = { ...generateSigningKey(MASTER, 'receipt', NOW), retiredAt: '2026-02-01T00:00:00.000Z' };
  const revoked = { ...generateSigningKey(MASTER, 'receipt', NOW), revokedAt: '2026-02-01T00:00:00.000Z' };
  const ledger = generateSigningKey(MASTER, 'ledger', NOW);
  const jwks = toJwks([receipt, retired, revoked, ledger]);
  t.deepEqual(jwks, {
    keys: [
      { kty: 'OKP', crv: 'Ed25519', x: receipt.publicJwk.x, kid: receipt.kid, alg: 'EdDSA', use: 'sig' },
      { kty: 'OKP', crv: 'Ed25519', x: retired.publicJwk.x, kid: retired.kid, alg: 'EdDSA', use: 'sig' },
      { kty: 'OKP', crv: 'Ed25519', x: ledger.publicJwk.x, kid: ledger.kid, alg: 'EdDSA', use: 'ledger' },
    ],
  });
  t.false(JSON.stringify(jwks).includes('sealed'), 'nothing private is published');
  t.deepEqual(toJwks([]), { keys: [] });
});

test('the published key set of the fixtures is what toJwks gives for the test keys', async (t) => {
  const record = (key: ReturnType<typeof receiptKey>, use: 'receipt' | 'ledger'): SigningKeyRecord => ({
    kid: key.kid,
    use,
    publicJwk: { kty: 'OKP', crv: 'Ed25519', x: key.x },
    sealedPrivateKey: '',
    createdAt: '',
    retiredAt: null,
    revokedAt: null,
  });
  t.deepEqual(
    toJwks([record(receiptKey(), 'receipt'), record(ledgerKey(), 'ledger')]),
    JSON.parse(await fixture('jwks.json')),
  );
});

test('generateSigningKey for receipt-es256: a P-256 key whose kid is its RFC 7638 thumbprint; sealed, it unseals to a key that signs ES256', async (t) => {
  const record = generateSigningKey(MASTER, 'receipt-es256', NOW);
  t.deepEqual(Object.keys(record.publicJwk), ['kty', 'crv', 'x', 'y']);
  t.like(record.publicJwk, { kty: 'EC', crv: 'P-256' });
  t.is(record.kid, await calculateJwkThumbprint(record.publicJwk, 'sha256'));
  const privateKey = unsealPrivateKey(record, MASTER);
  t.is(privateKey.asymmetricKeyType, 'ec');
  const message = Buffer.from('an AP2 receipt');
  const signature = sign('sha256', message, { key: privateKey, dsaEncoding: 'ieee-p1363' });
  t.true(verify('sha256', message, { key: publicKeyOf(record), dsaEncoding: 'ieee-p1363' }, signature));
  t.deepEqual(toJwks([record]).keys, [{ ...record.publicJwk, kid: record.kid, alg: 'ES256', use: 'sig' }]);
  t.throws(() => unsealPrivateKey(record, OTHER_MASTER), { message: UNSEAL });
  // A P-256 record moved to the Ed25519 receipt use does not unseal (the seal key is per use).
  t.throws(() => unsealPrivateKey({ ...record, use: 'receipt' }, MASTER), { message: UNSEAL });
});
