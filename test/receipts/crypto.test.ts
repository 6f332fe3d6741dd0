import test from 'ava';
import { sign } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { signReceipt, type ReceiptClaims } from '../../src/receipts/crypto.js';
import { receiptKey, ledgerKey, otherKey, RFC8032 } from '../fixtures/receipts/test-keys.js';

/**
 * Receipt signing: known answers from RFC 8032 and RFC 8037 anchor the fixed test keys; the
 * golden receipt (written by hand in test/fixtures/receipts/make-fixtures.ts) anchors signReceipt
 * byte for byte. The signing keys themselves (making, sealing, publishing): test/signing/.
 */

const fixture = (name: string) => readFile(new URL(`../fixtures/receipts/${name}`, import.meta.url), 'utf8');

const goldenClaims = async (): Promise<ReceiptClaims> => JSON.parse(await fixture('golden-claims.json'));
const goldenReceipt = async () => (await fixture('golden-receipt.jwt')).trim();

test('known answer: the test keys are those of RFC 8032 7.1, and TEST 1 signs the empty message as the RFC says', (t) => {
  const hexOf = (x: string) => Buffer.from(x, 'base64url').toString('hex');
  t.is(hexOf(receiptKey().x), RFC8032.receiptPublicHex);
  t.is(hexOf(ledgerKey().x), RFC8032.ledgerPublicHex);
  t.is(hexOf(otherKey().x), RFC8032.otherPublicHex);
  t.is(sign(null, Buffer.alloc(0), receiptKey().privateKey).toString('hex'), RFC8032.receiptEmptyMessageSignatureHex);
});

test('known answer: RFC 8037 A.3 thumbprint and A.4 JWS of the same key', (t) => {
  t.is(receiptKey().x, '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo');
  t.is(receiptKey().kid, 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k');
  const input = 'eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc';
  t.is(
    sign(null, Buffer.from(input), receiptKey().privateKey).toString('base64url'),
    'hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg',
  );
});

test('known answer: signReceipt reproduces the golden receipt byte for byte', async (t) => {
  const key = receiptKey();
  const token = signReceipt(key.privateKey, key.kid, await goldenClaims());
  t.is(token, await goldenReceipt());
  const [header, payload] = token.split('.');
  t.is(Buffer.from(header!, 'base64url').toString(), `{"alg":"EdDSA","kid":"${key.kid}","typ":"JWT"}`);
  t.is(Buffer.from(payload!, 'base64url').toString(), JSON.stringify(await goldenClaims()));
});

test('signReceipt refuses claims a verifier would call malformed, and keys that are not Ed25519 private keys', async (t) => {
  const key = receiptKey();
  const claims = await goldenClaims();
  for (const bad of [
    { amt: 12.5 },
    { amt: 0 },
    { amt: -1 },
    { cur: 'eur' },
    { cur: 'EURO' },
    { hum: 'no' },
    { sub: '' },
    { exp: 1.5 },
    { iat: undefined },
  ]) {
    t.throws(
      () => signReceipt(key.privateKey, key.kid, { ...claims, ...bad } as unknown as ReceiptClaims),
      { instanceOf: TypeError, message: /receipt claims refused/ },
      JSON.stringify(bad),
    );
  }
  t.throws(() => signReceipt(key.publicKey, key.kid, claims), { instanceOf: TypeError });
  t.throws(() => signReceipt(key.privateKey, '', claims), { instanceOf: TypeError });
});
