import test from 'ava';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { signReceipt } from '../../src/receipts/crypto.js';
import { authorize, createAgent, payment, type AgentFixture } from '../helpers/gate.js';
import { assertError, call } from '../helpers/http.js';
import { stopAndClean, svc } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { withStore } from '../helpers/store.js';
import { receiptKey } from '../fixtures/receipts/test-keys.js';
import { clearOfMinuteEdge } from '../helpers/wait.js';

// Rate-limit windows are whole minutes of the clock: each test counts inside one.
test.beforeEach(() => clearOfMinuteEdge());

/**
 * Receipts from a real server, checked the three ways name: by a
 * merchant with jose and the published JWKS alone, online through POST /v1/verify, and with
 * `svc receipt verify` offline and --online. All three must agree.
 */
let server: ServedInProcess;
let agent: AgentFixture;
let receipt: string;
let jwks: JSONWebKeySet;

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const parts = (token: string) => token.split('.') as [string, string, string];
const claimsOf = (token: string) => JSON.parse(Buffer.from(parts(token)[1], 'base64url').toString());
/** POST /v1/verify of one receipt, on this file's server unless another is named. */
const verifyOnline = (token: string, url = server.url) => call(url, 'POST', '/v1/verify', { json: { receipt: token } });

test.before(async () => {
  server = await serveInProcess({ env: { SVC_PUBLIC_RATE_PER_MINUTE: '10000' } });
  agent = await createAgent(server);
  const res = await authorize(server, agent.key, payment(1250));
  receipt = res.body.receipt;
  jwks = (await call(server.url, 'GET', '/.well-known/jwks.json')).body;
});

test.after.always(async () => {
  await stopAndClean(server);
});

function tamperedReceipt(): string {
  const [h, , s] = parts(receipt);
  return `${h}.${b64({ ...claimsOf(receipt), amt: 999_999 })}.${s}`;
}

function algNoneReceipt(): string {
  const [, p] = parts(receipt);
  return `${b64({ alg: 'none', typ: 'JWT' })}.${p}.`;
}

/** Same claims, signed by a key this deployment never published. */
function wrongKeyReceipt(): string {
  const key = receiptKey();
  return signReceipt(key.privateKey, key.kid, claimsOf(receipt));
}

test('a merchant verifies a receipt with jose and the published JWKS alone', async (t) => {
  // Only jose, the fetched key set and the token: no code of the product.
  const { payload, protectedHeader } = await jwtVerify(receipt, createLocalJWKSet(jwks), { algorithms: ['EdDSA'] });
  t.is(protectedHeader.alg, 'EdDSA');
  t.is(protectedHeader.typ, 'JWT');
  t.like(payload, {
    sub: agent.agentId,
    typ: 'payment',
    amt: 1250,
    cur: 'EUR',
    mer: 'acme.example',
    hum: false,
    iss: server.url,
  });
  t.is(payload.jti, String(payload['act']));
  for (const bad of [tamperedReceipt(), algNoneReceipt(), wrongKeyReceipt()]) {
    await t.throwsAsync(jwtVerify(bad, createLocalJWKSet(jwks), { algorithms: ['EdDSA'] }));
  }
});

test('the JWKS publishes public halves only, receipt keys (EdDSA and ES256) as sig and the ledger key as ledger', (t) => {
  t.deepEqual(jwks.keys.map((k) => `${k.use} ${k.alg}`).sort(), ['ledger EdDSA', 'sig ES256', 'sig EdDSA']);
  for (const k of jwks.keys) {
    if (k.alg === 'ES256') t.like(k, { kty: 'EC', crv: 'P-256' });
    else t.like(k, { kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA' });
    t.is(k.d, undefined, 'never a private half');
    t.is(typeof k.kid, 'string');
  }
});

test.serial('POST /v1/verify: valid with claims, then replayed from the second check on', async (t) => {
  const fresh = (await authorize(server, agent.key, payment(100))).body.receipt;
  const first = await verifyOnline(fresh);
  t.is(first.status, 200);
  t.like(first.body, {
    valid: true,
    reason: null,
    replayed: false,
    claims: { sub: agent.agentId, amt: 100, cur: 'EUR', hum: false },
  });
  for (let i = 0; i < 2; i += 1) {
    const again = await verifyOnline(fresh);
    t.like(again.body, { valid: true, replayed: true });
  }
});

test('POST /v1/verify names the reason for each kind of bad receipt', async (t) => {
  const cases: Array<[string, string, string | null, string]> = [
    [tamperedReceipt(), 'bad_signature', 'svc', 'the signature does not verify with the key the receipt names'],
    [
      algNoneReceipt(),
      'bad_signature',
      'svc',
      'svc\'s receipts are signed with EdDSA; this one says alg "none", which is refused',
    ],
    [wrongKeyReceipt(), 'unknown_key', 'svc', 'the key set holds no receipt key with the id the receipt names'],
    ['not-a-jws', 'malformed', null, 'not a well-formed receipt'],
  ];
  for (const [token, reason, shape, problem] of cases) {
    const res = await verifyOnline(token);
    t.is(res.status, 200);
    t.deepEqual(res.body, { valid: false, shape, claims: null, reason, problem, replayed: false }, reason);
  }
});

test.serial('POST /v1/verify: an expired receipt and one signed with the ledger key are refused', async (t) => {
  const claims = claimsOf(receipt);
  const { expired, ledgerSigned } = await withStore(server.dataDir, (app) =>
    app.store.write(async () => {
      const r = await app.services.signingKeys.currentInWrite('receipt');
      const l = await app.services.signingKeys.currentInWrite('ledger');
      return {
        expired: signReceipt(r.privateKey, r.record.kid, { ...claims, iat: claims.iat - 100, exp: claims.iat - 10 }),
        ledgerSigned: signReceipt(l.privateKey, l.record.kid, claims),
      };
    }),
  );
  const a = await verifyOnline(expired);
  t.like(a.body, { valid: false, reason: 'expired', claims: null });
  const b = await verifyOnline(ledgerSigned);
  t.like(b.body, { valid: false, reason: 'unknown_key' });
});

test('POST /v1/verify: a body without a receipt is 400; over 1 MB is 413; not JSON is 400 invalid_json', async (t) => {
  assertError(t, await call(server.url, 'POST', '/v1/verify', { json: {} }), 400, 'invalid_request');
  assertError(t, await verifyOnline('x'.repeat(1_100_000)), 413, 'body_too_large');
  assertError(
    t,
    await call(server.url, 'POST', '/v1/verify', {
      headers: { 'content-type': 'application/json' },
      body: '{"receipt":',
    }),
    400,
    'invalid_json',
  );
});

test.serial('svc receipt verify agrees with the server: valid, tampered, wrong key, alg none', async (t) => {
  const expectations: Array<[string, boolean, string | null]> = [
    [receipt, true, null],
    [tamperedReceipt(), false, 'bad_signature'],
    [wrongKeyReceipt(), false, 'unknown_key'],
    [algNoneReceipt(), false, 'bad_signature'],
  ];
  for (const [token, valid, reason] of expectations) {
    const offline = await svc(['receipt', 'verify', token, '--url', server.url, '--json']);
    t.is(offline.code, valid ? 0 : 1, offline.stdout + offline.stderr);
    t.like(JSON.parse(offline.stdout), { valid, reason });
    const online = await svc(['receipt', 'verify', token, '--online', '--url', server.url, '--json']);
    t.is(online.code, valid ? 0 : 1, online.stdout + online.stderr);
    t.like(JSON.parse(online.stdout), { valid, reason });
  }
});

test.serial('POST /v1/verify is rate limited per address', async (t) => {
  const limited = await serveInProcess({ env: { SVC_PUBLIC_RATE_PER_MINUTE: '3' } });
  try {
    const answers = [];
    for (let i = 0; i < 4; i += 1) answers.push(await verifyOnline('x.y.z', limited.url));
    t.deepEqual(
      answers.slice(0, 3).map((a) => a.status),
      [200, 200, 200],
    );
    assertError(t, answers[3]!, 429, 'rate_limited');
    t.regex(String(answers[3]!.headers['retry-after']), /^\d+$/);
  } finally {
    await stopAndClean(limited);
  }
});
