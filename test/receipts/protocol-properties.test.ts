import test from 'ava';
import fc from 'fast-check';
import { generateSigningKey, toJwks, unsealPrivateKey } from '../../src/signing/crypto.js';
import { checkAcpClaims, checkAp2Claims } from '../../src/receipts/protocol-claims.js';
import { signAcpAllowance, signAp2Receipt, type ProtocolSubject } from '../../src/receipts/protocol-sign.js';
import { verifyAnyReceipt } from '../../src/receipts/protocol-verify.js';

/**
 * Properties of the protocol receipts' parsers and verifier (src/receipts/protocol-*.ts), with a
 * real ES256 key made and sealed as the server makes it: no input makes them throw; nothing but
 * an untouched token verifies (any one character changed, any header, any payload); the claim
 * checks accept only what they give back unchanged.
 */
const MASTER = Buffer.alloc(32, 3);
const NOW = Date.UTC(2026, 10, 29, 12);
const record = generateSigningKey(MASTER, 'receipt-es256', NOW);
const privateKey = unsealPrivateKey(record, MASTER);
const keys = { jwks: toJwks([record, generateSigningKey(MASTER, 'receipt', NOW)]) };
const times = { issuer: 'https://svc.example', atMs: NOW, ttlSeconds: 3600 };
const subject = (decision: 'allow' | 'deny'): ProtocolSubject => ({
  id: 'act_PropertyAAAAAAAAAAAAAA',
  agentId: 'agt_PropertyAAAAAAAAAAAAAA',
  payment: { amount: 1250, currency: 'EUR', merchant: 'acme.example' },
  outcome: decision === 'allow' ? { decision } : { decision, signals: ['over_limit'], reason: 'Over the limit.' },
});
const tokens = {
  ap2: signAp2Receipt(privateKey, record.kid, subject('allow'), times),
  rejection: signAp2Receipt(privateKey, record.kid, subject('deny'), times),
  acp: signAcpAllowance(
    privateKey,
    record.kid,
    subject('allow'),
    { checkoutSessionId: 'csn_1', merchantId: 'm_1' },
    times,
  ),
};
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~= ';

test('the untouched tokens verify, each as its shape', async (t) => {
  t.like(await verifyAnyReceipt(tokens.ap2, keys, NOW), { valid: true, shape: 'ap2.payment_receipt' });
  t.like(await verifyAnyReceipt(tokens.rejection, keys, NOW), {
    valid: true,
    shape: 'ap2.payment_receipt',
    claims: { status: 'Error', error: 'over_limit' },
  });
  t.like(await verifyAnyReceipt(tokens.acp, keys, NOW), { valid: true, shape: 'acp.allowance' });
  t.like(await verifyAnyReceipt(tokens.ap2, keys, NOW + 3600_000), { valid: false, reason: 'expired' });
});

test('property: any one character changed in an AP2 receipt or ACP allowance is never valid', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(tokens.ap2, tokens.rejection, tokens.acp),
      fc.nat(),
      fc.constantFrom(...ALPHABET),
      async (token, at, char) => {
        const i = at % token.length;
        if (token[i] === char) return;
        const changed = token.slice(0, i) + char + token.slice(i + 1);
        const result = await verifyAnyReceipt(changed, keys, NOW);
        t.false(result.valid, changed);
        t.is(result.claims, null);
        t.is(typeof result.problem, 'string');
      },
    ),
    { numRuns: 400 },
  );
});

test('property: arbitrary strings and arbitrary JSON headers and payloads never throw and never verify', async (t) => {
  const segment = fc.oneof(
    fc.jsonValue().map(b64),
    fc.string().map((s) => Buffer.from(s).toString('base64url')),
  );
  const protocolish = fc.record(
    {
      status: fc.constantFrom('Success', 'Error', 'x'),
      payment_id: fc.string(),
      allowance: fc.object(),
      alg: fc.constantFrom('ES256', 'EdDSA', 'HS256', 'none'),
      kid: fc.constantFrom(record.kid, 'other'),
    },
    { requiredKeys: [] },
  );
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        fc.string(),
        fc.tuple(segment, segment, fc.string()).map((p) => p.join('.')),
        fc
          .tuple(protocolish, protocolish, fc.base64String())
          .map(([h, p, s]) => `${b64(h)}.${b64(p)}.${s.replace(/=/g, '')}`),
      ),
      async (token) => {
        const result = await verifyAnyReceipt(token, keys, NOW);
        t.false(result.valid);
        t.truthy(result.reason);
      },
    ),
    { numRuns: 300 },
  );
});

test('property: the claim checks never throw, and what they accept they give back as a fixed point', (t) => {
  const ap2ish = fc.record(
    {
      status: fc.constantFrom('Success', 'Error'),
      iss: fc.string(),
      iat: fc.integer(),
      exp: fc.integer(),
      reference: fc.string(),
      payment_id: fc.string(),
      psp_confirmation_id: fc.string(),
      network_confirmation_id: fc.string(),
      error: fc.string(),
      error_description: fc.string(),
      sub: fc.string(),
      payment: fc.record({
        transaction_id: fc.string(),
        payee: fc.record({ id: fc.string(), name: fc.string() }),
        payment_amount: fc.record({ amount: fc.integer(), currency: fc.constantFrom('EUR', 'eur', 'EURO') }),
      }),
    },
    { requiredKeys: [] },
  );
  const acpish = fc.record(
    {
      iss: fc.string(),
      sub: fc.string(),
      iat: fc.nat(),
      exp: fc.nat(),
      jti: fc.string(),
      allowance: fc.record(
        {
          reason: fc.constantFrom('one_time', 'recurring'),
          max_amount: fc.integer(),
          currency: fc.constantFrom('usd', 'USD', 'us'),
          checkout_session_id: fc.string(),
          merchant_id: fc.string(),
          expires_at: fc.oneof(
            fc.string(),
            fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
          ),
        },
        { requiredKeys: [] },
      ),
      risk_signals: fc.array(fc.record({ type: fc.string(), score: fc.integer(), action: fc.string() })),
      metadata: fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.integer())),
    },
    { requiredKeys: [] },
  );
  fc.assert(
    fc.property(fc.oneof(ap2ish, acpish, fc.object()), (value) => {
      for (const check of [checkAp2Claims, checkAcpClaims]) {
        const checked = check(value as Record<string, unknown>);
        if (checked.ok) t.deepEqual(check(checked.claims as unknown as Record<string, unknown>), checked);
        else t.is(typeof checked.problem, 'string');
      }
    }),
    { numRuns: 500 },
  );
});
