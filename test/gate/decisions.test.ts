import test from 'ava';
import { assertError, call } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { authorize, payment, PAY_ACME } from '../helpers/gate.js';
import {
  ACTION_ID,
  APPROVAL_ID,
  agentWithoutMandate,
  assertDenied,
  decodeReceipt,
  getAction,
  recordsAbout,
  makeAgent,
  type Agent,
} from './support.js';

/**
 * Decisions of POST /v1/actions/authorize against the agent's mandate, and
 * GET /v1/actions/{id}: allow with a signed receipt; deny with a signal and an
 * evidence record the ledger holds; review with a pending approval.
 */

let server: ServedInProcess;
let payer: Agent;
let limited: Agent;
let reviewed: Agent;
let deployer: Agent;

test.before(async () => {
  server = await serveInProcess();
  payer = await makeAgent(server, [PAY_ACME], 'payer');
  limited = await makeAgent(
    server,
    [{ ...PAY_ACME, maxAmount: 3000, periodLimit: { amount: 3000, period: 'day' } }],
    'limited',
  );
  reviewed = await makeAgent(
    server,
    [{ actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], approval: { above: 2000 } }],
    'reviewed',
  );
  deployer = await makeAgent(server, [{ actions: ['deploy'], domains: ['api.example.com'] }], 'deployer');
});

test.after.always(() => stopAndClean(server));

// Allow

test('a payment the mandate covers is allowed with a signed receipt and no evidence record', async (t) => {
  const res = await authorize(
    server,
    payer.key,
    payment(1250, { session: { id: 'run-42' }, metadata: { invoice: 1043 } }),
  );
  t.is(res.status, 200, res.text);
  const a = res.body;
  t.regex(a.id, ACTION_ID);
  t.is(a.object, 'action');
  t.is(a.agentId, payer.agentId);
  t.is(a.type, 'payment');
  t.is(a.summary, 'Pay invoice to Acme (1250)');
  t.deepEqual(a.payment, { amount: 1250, currency: 'EUR', merchant: 'acme.example' });
  t.is(a.decision, 'allow');
  t.is(a.status, 'allowed');
  t.deepEqual(a.signals, []);
  t.is(a.approvalId, null);
  t.is(a.evidenceRecord, null);
  t.is(a.settlement, null);
  t.is(a.sessionId, 'run-42');
  t.false(Number.isNaN(Date.parse(a.createdAt)));

  const { header, claims } = decodeReceipt(t, a.receipt);
  t.is(header.alg, 'EdDSA');
  t.is(typeof header.kid, 'string');
  t.like(claims, {
    sub: payer.agentId,
    act: a.id,
    jti: a.id,
    typ: 'payment',
    amt: 1250,
    cur: 'EUR',
    mer: 'acme.example',
    hum: false,
  });

  const verified = await call(server.url, 'POST', '/v1/verify', { json: { receipt: a.receipt } });
  t.is(verified.status, 200, verified.text);
  t.is(verified.body.valid, true);
  t.is(verified.body.claims.act, a.id);

  const records = await recordsAbout(server, payer.wid, payer.cookie, a.id);
  t.deepEqual(
    records.map((r) => r.kind),
    ['action.allowed'],
  );
  t.is(records[0]!.actor, `agent:${payer.agentId}`);
});

// Deny, one test per signal

test('a type the mandate does not name is denied: type_not_allowed', async (t) => {
  const res = await authorize(server, payer.key, {
    type: 'refund',
    summary: 'Refund Acme',
    payment: { amount: 100, currency: 'EUR', merchant: 'acme.example' },
  });
  await assertDenied(t, server, payer, res, 'type_not_allowed');
});

test('another merchant is denied: merchant_not_allowed', async (t) => {
  const res = await authorize(
    server,
    payer.key,
    payment(100, { payment: { amount: 100, currency: 'EUR', merchant: 'evil.example' } }),
  );
  await assertDenied(t, server, payer, res, 'merchant_not_allowed');
});

test('another currency is denied: currency_not_allowed', async (t) => {
  const res = await authorize(
    server,
    payer.key,
    payment(100, { payment: { amount: 100, currency: 'USD', merchant: 'acme.example' } }),
  );
  await assertDenied(t, server, payer, res, 'currency_not_allowed');
});

test('an amount over the per-action limit is denied: over_limit; at the limit it is allowed', async (t) => {
  const over = await authorize(server, payer.key, payment(PAY_ACME.maxAmount + 1));
  await assertDenied(t, server, payer, over, 'over_limit');
  const at = await authorize(server, payer.key, payment(PAY_ACME.maxAmount));
  t.is(at.body.decision, 'allow');
});

test('a payment that would take the period total over its limit is denied: period_limit', async (t) => {
  const first = await authorize(server, limited.key, payment(2000));
  t.is(first.body.decision, 'allow', first.text);
  const second = await authorize(server, limited.key, payment(1001));
  await assertDenied(t, server, limited, second, 'period_limit');
  const rest = await authorize(server, limited.key, payment(1000));
  t.is(rest.body.decision, 'allow', 'exactly the rest of the period limit is still allowed');
  const one = await authorize(server, limited.key, payment(1));
  await assertDenied(t, server, limited, one, 'period_limit');
});

test('an agent whose mandate has no rules is denied', async (t) => {
  const empty = await makeAgent(server, [], 'empty-mandate');
  const res = await authorize(server, empty.key, payment(100));
  await assertDenied(t, server, empty, res, 'type_not_allowed');
});

test('an agent that never had a mandate is denied, for payments and other actions alike', async (t) => {
  const bare = await agentWithoutMandate(server, 'no-mandate');
  await assertDenied(t, server, bare, await authorize(server, bare.key, payment(100)), 'type_not_allowed');
  await assertDenied(
    t,
    server,
    bare,
    await authorize(server, bare.key, { type: 'email', summary: 'Mail the customer' }),
    'type_not_allowed',
  );
});

// Review

test('an amount above approval.above needs a person: review, pending_approval, an approval id, no receipt', async (t) => {
  const res = await authorize(server, reviewed.key, payment(2500));
  t.is(res.status, 200, res.text);
  t.is(res.body.decision, 'review');
  t.is(res.body.status, 'pending_approval');
  t.regex(res.body.approvalId, APPROVAL_ID);
  t.is(res.body.receipt, null);
  t.is(res.body.settlement, null);
  const records = await recordsAbout(server, reviewed.wid, reviewed.cookie, res.body.id);
  t.is(records.length, 1, 'the decision is recorded once');
  t.deepEqual(await getAction(server, reviewed.key, res.body.id).then((r) => r.body), res.body);
});

test('an amount at or below approval.above is allowed outright under the same rule', async (t) => {
  for (const amount of [2000, 10]) {
    const res = await authorize(server, reviewed.key, payment(amount));
    t.is(res.body.decision, 'allow', res.text);
    t.is(res.body.approvalId, null);
    t.is(typeof res.body.receipt, 'string');
  }
});

// Domains

test('a non-payment action on a domain the rule names is allowed, without a receipt', async (t) => {
  for (const domain of ['api.example.com', 'API.Example.COM']) {
    const res = await authorize(server, deployer.key, {
      type: 'deploy',
      summary: 'Deploy the API',
      target: { domain },
    });
    t.is(res.status, 200, res.text);
    t.is(res.body.decision, 'allow', domain);
    t.is(res.body.status, 'allowed');
    t.is(res.body.receipt, null);
    t.is(res.body.evidenceRecord, null);
    t.deepEqual(res.body.target, { domain: domain.toLowerCase() });
  }
});

test('a non-payment action on another domain is denied: domain_not_allowed', async (t) => {
  for (const domain of ['evil.example.com', 'example.com', 'api.example.com.evil.example']) {
    const res = await authorize(server, deployer.key, {
      type: 'deploy',
      summary: 'Deploy the API',
      target: { domain },
    });
    await assertDenied(t, server, deployer, res, 'domain_not_allowed');
  }
});

test('a non-payment action that names no domain is denied by a rule that lists domains', async (t) => {
  const res = await authorize(server, deployer.key, { type: 'deploy', summary: 'Deploy somewhere' });
  await assertDenied(t, server, deployer, res, 'domain_not_allowed');
});

// GET /v1/actions/{id}

test('GET /v1/actions/{id}: the agent reads its own action, equal to the authorize answer', async (t) => {
  for (const body of [payment(700), payment(99_999)]) {
    const decided = await authorize(server, payer.key, body);
    t.is(decided.status, 200);
    const read = await getAction(server, payer.key, decided.body.id);
    t.is(read.status, 200, read.text);
    t.deepEqual(read.body, decided.body);
  }
});

test("GET /v1/actions/{id}: another agent's action is not found", async (t) => {
  const decided = await authorize(server, payer.key, payment(300));
  t.is(decided.status, 200);
  assertError(t, await getAction(server, limited.key, decided.body.id), 404, 'not_found');
  t.is((await getAction(server, payer.key, decided.body.id)).status, 200, 'its own agent still reads it');
});

test('GET /v1/actions/{id}: an unknown id is not found', async (t) => {
  for (const id of ['act_0000000000000000000000', 'act_nope', 'evr_0000000000000000000000']) {
    assertError(t, await getAction(server, payer.key, id), 404, 'not_found');
  }
});

/*
 * A rule for `*.acme.example` covers acme.example's subdomains. A merchant name that is not a
 * subdomain of acme.example, but merely ends in ".acme.example", is not allowed, nor gets a valid
 * receipt naming it.
 */
const WILDCARD = [{ actions: ['payment'], merchants: ['*.acme.example'], currencies: ['EUR'], maxAmount: 5000 }];

test('a wildcard merchant rule covers a subdomain', async (t) => {
  const fx = await makeAgent(server, WILDCARD, 'wildcard-bot-control');
  const res = await authorize(server, fx.key, {
    type: 'payment',
    summary: 'Pay',
    payment: { amount: 100, currency: 'EUR', merchant: 'shop.acme.example' },
  });
  t.is(res.body.decision, 'allow', res.text);
});

test('a wildcard merchant rule covers no name that merely ends in the domain', async (t) => {
  const fx = await makeAgent(server, WILDCARD, 'wildcard-bot');
  for (const merchant of [
    'evil.example/.acme.example',
    'evil.example#.acme.example',
    'https://evil.example?.acme.example',
    'evil.example .acme.example',
    'evil.example@.acme.example',
  ]) {
    const res = await authorize(server, fx.key, {
      type: 'payment',
      summary: 'Pay',
      payment: { amount: 100, currency: 'EUR', merchant },
    });
    t.true(
      res.status === 400 || res.body.decision === 'deny',
      `${merchant}: ${res.status} decision ${res.body.decision}, receipt ${res.body.receipt ? 'issued' : 'none'}`,
    );
  }
});
