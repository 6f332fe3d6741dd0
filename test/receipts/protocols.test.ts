import test from 'ava';
import { createHash, createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import canonicalize from 'canonicalize';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet, type JWTPayload } from 'jose';
import { authorize, createAgent, PAY_ACME, payment, type AgentFixture } from '../helpers/gate.js';
import { bearer, call, csrf } from '../helpers/http.js';
import { removeDir, stopAndClean, svc, tempDir } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * The protocol receipts from a real server (docs/ap2-receipts.md, docs/acp.md): an allowed payment
 * asked for them carries an AP2 Payment Receipt and a signed ACP allowance (ES256) beside svc's
 * own (EdDSA); a denied one an AP2 rejection receipt. Each is verified three ways: by jose with
 * the served JWKS alone, by POST /v1/verify, and by `svc receipt verify` offline, which say which
 * shape it is and what it says. Forgeries (alg none, HS256 with the public key, an ES256 key
 * presented as EdDSA, a changed body) are refused naming what is wrong; a rotation keeps the old
 * receipts verifiable; a payment that waited for a person gets them when it is approved.
 */
let server: ServedInProcess;
let agent: AgentFixture;
let jwksDir: string;

const ACP = { checkoutSessionId: 'csn_01HV3P3XYZ9ABC', merchantId: 'acme_store' };
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const parts = (token: string) => token.split('.') as [string, string, string];
const payloadOf = (token: string) => JSON.parse(Buffer.from(parts(token)[1], 'base64url').toString());
const headerOf = (token: string) => JSON.parse(Buffer.from(parts(token)[0], 'base64url').toString());
const verifyOnline = (token: string) => call(server.url, 'POST', '/v1/verify', { json: { receipt: token } });
const jwks = async (): Promise<JSONWebKeySet> => (await call(server.url, 'GET', '/.well-known/jwks.json')).body;
/** The ES256 key that signed a token, from the served key set. */
const es256Jwk = async (token: string) => (await jwks()).keys.find((k) => k.kid === headerOf(token).kid)!;
/** The ES256 tokens checked by jose alone: only ES256, against the served key set. */
const joseVerify = async (token: string): Promise<JWTPayload> =>
  (await jwtVerify(token, createLocalJWKSet(await jwks()), { algorithms: ['ES256'] })).payload;

async function allowedWithProtocols(amount: number) {
  const res = await authorize(server, agent.key, payment(amount, { receipts: ['ap2', 'acp'], acp: ACP }));
  if (res.status !== 200) throw new Error(`authorize: ${res.status} ${res.text}`);
  return res.body as { id: string; receipt: string; ap2Receipt: string; acpAllowance: string };
}

test.before(async () => {
  server = await serveInProcess({ env: { SVC_PUBLIC_RATE_PER_MINUTE: '10000' } });
  agent = await createAgent(server);
  jwksDir = await tempDir('svc-protocol-jwks-');
});

test.after.always(async () => {
  await stopAndClean(server);
  await removeDir(jwksDir);
});

test('an allowed payment carries svc receipt, an AP2 Payment Receipt and an ACP allowance; jose verifies them against the JWKS', async (t) => {
  const action = await allowedWithProtocols(1250);
  t.is(headerOf(action.receipt).alg, 'EdDSA');
  const kid = headerOf(action.ap2Receipt).kid;
  t.true(
    (await jwks()).keys.some((k) => k.kid === kid && k.kty === 'EC' && k.alg === 'ES256'),
    'the key is a published ES256 key',
  );
  t.deepEqual(headerOf(action.ap2Receipt), { alg: 'ES256', kid, typ: 'JWT' });
  t.deepEqual(headerOf(action.acpAllowance), { alg: 'ES256', kid, typ: 'acp-allowance+jwt' });

  const ap2 = await joseVerify(action.ap2Receipt);
  t.like(ap2, {
    status: 'Success',
    iss: server.url,
    payment_id: action.id,
    psp_confirmation_id: action.id,
    network_confirmation_id: action.id,
    sub: agent.agentId,
    payment: {
      transaction_id: action.id,
      payee: { id: 'acme.example', name: 'acme.example', website: 'https://acme.example' },
      payment_amount: { amount: 1250, currency: 'EUR' },
    },
  });
  // The reference, recomputed here: SHA-256 over the RFC 8785 JSON of the payment, base64url.
  const reference = createHash('sha256').update(canonicalize(ap2.payment)!).digest('base64url');
  t.is(ap2.reference, reference);
  t.true(typeof ap2.iat === 'number' && ap2.exp! > ap2.iat);

  const acp = await joseVerify(action.acpAllowance);
  t.like(acp, {
    iss: server.url,
    sub: agent.agentId,
    jti: action.id,
    allowance: {
      reason: 'one_time',
      max_amount: 1250,
      currency: 'eur',
      checkout_session_id: ACP.checkoutSessionId,
      merchant_id: ACP.merchantId,
      expires_at: new Date(acp.exp! * 1000).toISOString(),
    },
    risk_signals: [],
    metadata: { svc_action_id: action.id, svc_agent_id: agent.agentId, merchant_domain: 'acme.example' },
  });
  // An ES256 token is not verified as EdDSA, nor svc's receipt as ES256.
  await t.throwsAsync(jwtVerify(action.ap2Receipt, createLocalJWKSet(await jwks()), { algorithms: ['EdDSA'] }));
  await t.throwsAsync(jwtVerify(action.receipt, createLocalJWKSet(await jwks()), { algorithms: ['ES256'] }));
});

test('a payment that asks for nothing gets svc receipt alone, with no protocol fields', async (t) => {
  const res = await authorize(server, agent.key, payment(300));
  t.is(res.status, 200);
  t.is(typeof res.body.receipt, 'string');
  t.false('ap2Receipt' in res.body);
  t.false('acpAllowance' in res.body);
});

test('a denied payment that asked for AP2 gets an AP2 rejection receipt naming why, and no allowance', async (t) => {
  const res = await authorize(server, agent.key, payment(9000, { receipts: ['ap2'], acp: ACP }));
  t.is(res.status, 200);
  t.like(res.body, { decision: 'deny', receipt: null, acpAllowance: null });
  const rejection = await joseVerify(res.body.ap2Receipt);
  t.like(rejection, {
    status: 'Error',
    error: res.body.signals[0],
    error_description: res.body.reason,
    payment_id: res.body.id,
    payment: { payment_amount: { amount: 9000, currency: 'EUR' } },
  });
  t.false('psp_confirmation_id' in rejection);
  const online = await verifyOnline(res.body.ap2Receipt);
  t.like(online.body, { valid: true, shape: 'ap2.payment_receipt', replayed: false, claims: { status: 'Error' } });
});

test.serial('POST /v1/verify and svc receipt verify (offline) detect each shape and say what it says', async (t) => {
  const action = await allowedWithProtocols(700);
  const file = join(jwksDir, 'jwks.json');
  await writeFile(file, JSON.stringify(await jwks()));
  const cases = [
    { token: action.receipt, shape: 'svc', claims: { amt: 700, jti: action.id } },
    { token: action.ap2Receipt, shape: 'ap2.payment_receipt', claims: { status: 'Success', payment_id: action.id } },
    { token: action.acpAllowance, shape: 'acp.allowance', claims: { allowance: { max_amount: 700 }, jti: action.id } },
  ];
  for (const [i, c] of cases.entries()) {
    const online = await verifyOnline(c.token);
    t.is(online.status, 200);
    // One action: the first shape shown marks its receipt seen; the others are then repeats.
    t.like(online.body, {
      valid: true,
      shape: c.shape,
      reason: null,
      problem: null,
      replayed: i > 0,
      claims: c.claims,
    });
    const offline = await svc(['receipt', 'verify', c.token, '--jwks', file, '--json']);
    t.is(offline.code, 0, offline.stderr);
    t.like(JSON.parse(offline.stdout), { valid: true, shape: c.shape, claims: c.claims });
    const text = await svc(['receipt', 'verify', c.token, '--jwks', file]);
    t.regex(text.stdout, /^VALID receipt/);
  }
  const ap2Text = await svc(['receipt', 'verify', action.ap2Receipt, '--jwks', file]);
  t.regex(ap2Text.stdout, /AP2 Payment Receipt/);
  t.regex(ap2Text.stdout, /EUR 7\.00 \(700 minor units\)/);
  const acpText = await svc(['receipt', 'verify', action.acpAllowance, '--jwks', file]);
  t.regex(acpText.stdout, new RegExp(`checkout session\\s+${ACP.checkoutSessionId}`));
});

/** Forgeries of a real AP2 receipt and ACP allowance, each with what the refusal must name. */
async function forgeries(): Promise<Array<{ name: string; token: string; reason: string; problem: RegExp }>> {
  const action = await allowedWithProtocols(800);
  const es = await es256Jwk(action.ap2Receipt);
  const [h, p] = parts(action.ap2Receipt);
  const input = (header: object, payload = p) => `${b64(header)}.${payload}`;
  // HS256 keyed with the public key's text, the classic confusion.
  const hsInput = input({ alg: 'HS256', kid: es.kid, typ: 'JWT' });
  const hs = `${hsInput}.${createHmac('sha256', JSON.stringify(es)).update(hsInput).digest('base64url')}`;
  // EdDSA under the ES256 key's kid, signed by a key of the forger's.
  const forger = generateKeyPairSync('ed25519').privateKey;
  const edInput = input({ alg: 'EdDSA', kid: es.kid, typ: 'JWT' });
  const ed = `${edInput}.${sign(null, Buffer.from(edInput), forger).toString('base64url')}`;
  // svc's own receipt shape, signed EdDSA under the ES256 key's kid.
  const svcClaims = b64(payloadOf(action.receipt));
  const edSvcInput = `${b64({ alg: 'EdDSA', kid: es.kid, typ: 'JWT' })}.${svcClaims}`;
  const edSvc = `${edSvcInput}.${sign(null, Buffer.from(edSvcInput), forger).toString('base64url')}`;
  // A changed body: a bigger amount, its reference recomputed so that only the signature tells.
  const claims = payloadOf(action.ap2Receipt);
  claims.payment.payment_amount.amount = 80_000;
  claims.reference = createHash('sha256').update(canonicalize(claims.payment)!).digest('base64url');
  const changed = `${h}.${b64(claims)}.${parts(action.ap2Receipt)[2]}`;
  const allowance = payloadOf(action.acpAllowance);
  allowance.allowance.max_amount = 80_000;
  const [ah, , as] = parts(action.acpAllowance);
  return [
    {
      name: 'alg none',
      token: `${input({ alg: 'none', typ: 'JWT' })}.`,
      reason: 'bad_signature',
      problem: /alg "none"/,
    },
    {
      name: 'HS256 keyed with the public key',
      token: hs,
      reason: 'bad_signature',
      problem: /alg "HS256", which is refused/,
    },
    {
      name: 'ES256 key used as EdDSA (AP2 shape)',
      token: ed,
      reason: 'bad_signature',
      problem: /signed with ES256.*alg "EdDSA"/,
    },
    { name: 'ES256 key used as EdDSA (svc shape)', token: edSvc, reason: 'unknown_key', problem: /is an ES256 key/ },
    { name: 'AP2 receipt over a changed body', token: changed, reason: 'bad_signature', problem: /was changed/ },
    {
      name: 'ACP allowance over a changed body',
      token: `${ah}.${b64(allowance)}.${as}`,
      reason: 'bad_signature',
      problem: /was changed/,
    },
    {
      name: 'AP2 claims missing',
      token: `${h}.${b64({ status: 'Success', payment_id: 'x' })}.${parts(action.ap2Receipt)[2]}`,
      reason: 'malformed',
      problem: /claim "iss"/,
    },
  ];
}

test.serial(
  'forgeries are refused by POST /v1/verify, svc receipt verify and jose, each naming what is wrong',
  async (t) => {
    const file = join(jwksDir, 'jwks-forgeries.json');
    await writeFile(file, JSON.stringify(await jwks()));
    for (const f of await forgeries()) {
      const online = await verifyOnline(f.token);
      t.is(online.status, 200, f.name);
      t.like(online.body, { valid: false, reason: f.reason, claims: null, replayed: false }, f.name);
      t.regex(online.body.problem, f.problem, f.name);
      const offline = await svc(['receipt', 'verify', f.token, '--jwks', file, '--json']);
      t.is(offline.code, 1, f.name);
      t.like(JSON.parse(offline.stdout), { valid: false, reason: f.reason }, f.name);
      await t.throwsAsync(
        jwtVerify(f.token, createLocalJWKSet(await jwks()), { algorithms: ['ES256', 'EdDSA'] }),
        undefined,
        f.name,
      );
    }
  },
);

test('bad requests for protocol receipts are refused with 400, naming the field', async (t) => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [payment(100, { receipts: ['acp'] }), 'acp'],
    [payment(100, { receipts: ['ap2', 'ap2'] }), 'receipts.1'],
    [payment(100, { receipts: ['x402'] }), 'receipts.0'],
    [payment(100, { receipts: [] }), 'receipts'],
    [payment(100, { acp: { checkoutSessionId: 'csn\u0000', merchantId: 'm' } }), 'acp.checkoutSessionId'],
    [payment(100, { acp: { checkoutSessionId: 'csn_1' } }), 'acp.merchantId'],
    [payment(100, { acp: { checkoutSessionId: 'csn_1', merchantId: 'm'.repeat(257) } }), 'acp.merchantId'],
    [{ type: 'email', summary: 'Send a note', receipts: ['ap2'] }, 'payment'],
  ];
  for (const [body, field] of cases) {
    const res = await authorize(server, agent.key, body);
    t.is(res.status, 400, JSON.stringify(body));
    t.is(res.body.error.type, 'invalid_request');
    t.true(
      res.body.error.errors.some((e: { field: string }) => e.field === field),
      `${JSON.stringify(body)}: ${JSON.stringify(res.body.error.errors)}`,
    );
  }
});

test.serial('a rotation signs new protocol receipts with a new ES256 key; the old ones keep verifying', async (t) => {
  const before = await allowedWithProtocols(900);
  const oldKid = headerOf(before.ap2Receipt).kid;
  const rotated = await server.app.services.receipts.rotateKey('operator:test');
  t.is(rotated.retiredEs256Kid, oldKid);
  t.not(rotated.es256Kid, oldKid);
  const after = await allowedWithProtocols(901);
  t.is(headerOf(after.ap2Receipt).kid, rotated.es256Kid);
  t.is(headerOf(after.acpAllowance).kid, rotated.es256Kid);
  const published = (await jwks()).keys.filter((k) => k.alg === 'ES256').map((k) => k.kid);
  t.deepEqual(published.sort(), [oldKid, rotated.es256Kid].sort());
  for (const token of [before.ap2Receipt, before.acpAllowance, after.ap2Receipt, after.acpAllowance]) {
    await t.notThrowsAsync(joseVerify(token));
    t.like((await verifyOnline(token)).body, { valid: true });
  }
});

test('a payment that waited for a person gets the protocol receipts it asked for when it is approved', async (t) => {
  const reviewed = await createAgent(server, [{ ...PAY_ACME, approval: { above: 1000 } }], 'reviewed-bot');
  const asked = await authorize(server, reviewed.key, payment(2500, { receipts: ['ap2', 'acp'], acp: ACP }));
  t.like(asked.body, { decision: 'review', receipt: null, ap2Receipt: null, acpAllowance: null });
  const approved = await call(server.url, 'POST', `/api/w/${reviewed.wid}/approvals/${asked.body.approvalId}/approve`, {
    headers: { ...csrf, cookie: reviewed.cookie },
    json: {},
  });
  t.is(approved.status, 200, approved.text);
  const action = (await call(server.url, 'GET', `/v1/actions/${asked.body.id}`, { headers: bearer(reviewed.key) }))
    .body;
  t.like(action, { decision: 'allow', status: 'allowed' });
  t.like(await joseVerify(action.ap2Receipt), { status: 'Success', payment_id: action.id });
  t.like(await joseVerify(action.acpAllowance), {
    jti: action.id,
    allowance: { max_amount: 2500, checkout_session_id: ACP.checkoutSessionId },
  });
});

test('a payment a person denies gets the AP2 rejection receipt it asked for, and no allowance', async (t) => {
  const reviewed = await createAgent(server, [{ ...PAY_ACME, approval: { above: 1000 } }], 'refused-bot');
  const asked = await authorize(server, reviewed.key, payment(2600, { receipts: ['ap2', 'acp'], acp: ACP }));
  t.like(asked.body, { decision: 'review', ap2Receipt: null, acpAllowance: null });
  const denied = await call(server.url, 'POST', `/api/w/${reviewed.wid}/approvals/${asked.body.approvalId}/deny`, {
    headers: { ...csrf, cookie: reviewed.cookie },
    json: { note: 'not this month' },
  });
  t.is(denied.status, 200, denied.text);
  const action = (await call(server.url, 'GET', `/v1/actions/${asked.body.id}`, { headers: bearer(reviewed.key) }))
    .body;
  t.like(action, { decision: 'deny', status: 'denied', receipt: null, acpAllowance: null });
  t.like(await joseVerify(action.ap2Receipt), {
    status: 'Error',
    payment_id: action.id,
    error_description: action.reason,
    payment: { payment_amount: { amount: 2600, currency: 'EUR' } },
  });
});
