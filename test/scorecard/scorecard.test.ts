import test from 'ava';
import type { ScorecardClaims } from '../../src/scorecard/service.js';
import { decodeProtectedHeader, importJWK, jwtVerify, createLocalJWKSet, type JSONWebKeySet, type JWK } from 'jose';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { authorize, PAY_ACME } from '../helpers/gate.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { makeBot, pay, pendingPayment, reviewRule, SERVER_ENV, type Bot } from '../approvals/support.js';

/**
 * The signed scorecard (issue 5): GET /v1/admin/scorecard with evidence:read answers a
 * JWS over the workspace's control figures, signed with the ledger key (never the receipt key),
 * that an auditor verifies with jose and the published JWKS alone.
 */
let server: ServedInProcess;
let owner: Person;
let payer: Bot;
let idle: Bot;
let auditor: string;
let reader: string;

const tokenOf = async (name: string, scopes: string[]) =>
  expectStatus(await owner.send('POST', '/service-tokens', { name, scopes, expiresInDays: 7 }), 201, 'token').body
    .token as string;
const scorecard = (token: string) => call(server.url, 'GET', '/v1/admin/scorecard', { headers: bearer(token) });
const jwks = async () =>
  expectStatus(await call(server.url, 'GET', '/.well-known/jwks.json'), 200, 'jwks').body as JSONWebKeySet;

test.before(async () => {
  server = await serveInProcess({ env: SERVER_ENV });
  owner = await ownerConsole(server);
  payer = await makeBot(owner, 'payer', [reviewRule()]);
  idle = await makeBot(owner, 'idle', [PAY_ACME]);
  auditor = await tokenOf('auditor', ['evidence:read']);
  reader = await tokenOf('inventory', ['agents:read']);
});

test.after.always(() => stopAndClean(server));

test.serial('the scorecard counts agents, drills, approvals and refusals, signed with the ledger key', async (t) => {
  // Refusals: a merchant outside the mandate, a frozen agent, and a payment a person denied.
  t.is((await authorize(server, payer.key, pay(100))).body.decision, 'allow');
  t.deepEqual(
    (
      await authorize(server, payer.key, {
        ...pay(100),
        payment: { amount: 100, currency: 'EUR', merchant: 'elsewhere.example' },
      })
    ).body.signals,
    ['merchant_not_allowed'],
  );
  const approved = await pendingPayment(t, server, payer, 3000, 'first');
  const denied = await pendingPayment(t, server, payer, 3100, 'second');
  await pendingPayment(t, server, payer, 3200, 'left waiting');
  expectStatus(await owner.send('POST', `/approvals/${approved.approvalId}/approve`, {}), 200, 'approve');
  expectStatus(await owner.send('POST', `/approvals/${denied.approvalId}/deny`, { note: 'not this one' }), 200, 'deny');
  expectStatus(await owner.send('POST', `/agents/${idle.agentId}/stop`, { reason: 'scorecard' }), 200, 'stop');
  t.deepEqual((await authorize(server, idle.key, pay(100))).body.signals, ['agent_frozen']);
  const drill = await call(server.url, 'POST', '/v1/admin/drills', {
    headers: bearer(await tokenOf('drill', ['agents:freeze'])),
    json: {},
  });
  t.is(drill.status, 201, drill.text);

  const res = await scorecard(auditor);
  t.is(res.status, 200, res.text);
  t.deepEqual(Object.keys(res.body), ['scorecard']);
  const header = decodeProtectedHeader(res.body.scorecard);
  t.like(header, { alg: 'EdDSA', typ: 'svc-scorecard+jwt' });
  const published = (await jwks()).keys.find((k) => k.kid === header.kid);
  t.is(published?.use, 'ledger', 'signed with the ledger key the JWKS publishes');

  const { payload } = await jwtVerify(res.body.scorecard, await importJWK(published as JWK, 'EdDSA'), {
    algorithms: ['EdDSA'],
    typ: 'svc-scorecard+jwt',
  });
  t.like(payload, {
    iss: server.url,
    sub: owner.wid,
    agents: { total: 2, running: 1, stopped: 1 },
    drills: { run: 1, passed: 1, failed: 0 },
    approvals: { decided: 2, approved: 1, denied: 1, expired: 0, pending: 1 },
    refusals: { total: 3, bySignal: { merchant_not_allowed: 1, agent_frozen: 1, approval_denied: 1 } },
  });
  const figures = payload as unknown as ScorecardClaims;
  t.is(typeof figures.drills.timeToEffectMs.median, 'number');
  const effects = drill.body.points
    .map((p: { timeToEffectMs: number }) => p.timeToEffectMs)
    .sort((a: number, b: number) => a - b);
  t.is(figures.drills.timeToEffectMs.median, effects[1], 'the median over every point of every drill');
  t.is(figures.drills.timeToEffectMs.max, effects[2]);
  t.is(figures.drills.lastAt, drill.body.startedAt);
  const wait = figures.approvals.medianWaitSeconds;
  t.true(wait !== null && wait >= 0 && wait < 60, String(wait));
  t.regex(figures.jti, /^scr_[0-9A-Za-z]{22}$/);
  t.true(figures.ledgerSize > 0 && figures.ledgerSize <= (await owner.ledger()).length);
});

test.serial('a scorecard is no receipt: the receipt keys do not verify it, nor does POST /v1/verify', async (t) => {
  const card = (await scorecard(auditor)).body.scorecard as string;
  const receiptKeys = { keys: (await jwks()).keys.filter((k) => k.use === 'sig') };
  await t.throwsAsync(jwtVerify(card, createLocalJWKSet(receiptKeys), { algorithms: ['EdDSA'] }));
  const checked = await call(server.url, 'POST', '/v1/verify', { json: { receipt: card } });
  t.is(checked.status, 200);
  t.false(checked.body.valid);
});

test.serial('a scorecard with one changed figure fails verification', async (t) => {
  const card = (await scorecard(auditor)).body.scorecard as string;
  const [head, body, signature] = card.split('.') as [string, string, string];
  const claims = JSON.parse(Buffer.from(body, 'base64url').toString());
  claims.agents.stopped = 0;
  const forged = `${head}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
  const published = (await jwks()).keys.find((k) => k.kid === decodeProtectedHeader(card).kid) as JWK;
  await t.throwsAsync(jwtVerify(forged, await importJWK(published, 'EdDSA'), { algorithms: ['EdDSA'] }), {
    code: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
  });
});

test.serial('reading the scorecard needs evidence:read', async (t) => {
  assertError(t, await scorecard(reader), 403, 'missing_scope');
  assertError(t, await call(server.url, 'GET', '/v1/admin/scorecard'), 401, 'unauthenticated');
  assertError(
    t,
    await call(server.url, 'GET', '/v1/admin/scorecard', { headers: { cookie: owner.cookie } }),
    401,
    'unauthenticated',
  );
});
