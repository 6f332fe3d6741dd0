import test from 'ava';
import { assertError, call } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { authorize, payment, PAY_ACME } from '../helpers/gate.js';
import { assertDenied, getAction, recordsAbout, settle, makeAgent, type Agent } from './support.js';

/**
 * POST /v1/actions/{id}/settle: only an allowed, unsettled
 * action can be settled, once; a failed or cancelled settlement gives its amount back to the
 * period, and a completed one with an amount replaces the authorized amount.
 */

let server: ServedInProcess;
let payer: Agent;
let other: Agent;

const LIMITED = { ...PAY_ACME, maxAmount: 3000, periodLimit: { amount: 3000, period: 'day' } };

test.before(async () => {
  server = await serveInProcess();
  payer = await makeAgent(
    server,
    [
      PAY_ACME,
      { actions: ['crm.update'] },
      { actions: ['payment'], merchants: ['big.example'], currencies: ['EUR'], approval: { above: 100 } },
    ],
    'payer',
  );
  other = await makeAgent(server, [PAY_ACME], 'other');
});

test.after.always(() => stopAndClean(server));

async function allowed(t: import('ava').ExecutionContext, fx: Agent, amount: number): Promise<string> {
  const res = await authorize(server, fx.key, payment(amount));
  t.is(res.body.decision, 'allow', res.text);
  return res.body.id as string;
}

for (const status of ['completed', 'failed', 'cancelled'] as const) {
  test(`settle ${status} without an amount: status settled, with the settlement, stored and recorded`, async (t) => {
    const id = await allowed(t, payer, 1250);
    const res = await settle(server, payer.key, id, { status });
    t.is(res.status, 200, res.text);
    t.is(res.body.id, id);
    t.is(res.body.status, 'settled');
    t.is(res.body.decision, 'allow');
    t.is(res.body.settlement.status, status);
    t.false(Number.isNaN(Date.parse(res.body.settlement.at)));
    t.is(
      res.body.settlement.amount,
      status === 'completed' ? 1250 : null,
      'completed without an amount: the authorized amount was paid; failed or cancelled: nothing was',
    );
    t.deepEqual((await getAction(server, payer.key, id)).body, res.body, 'the settled action is what GET answers');
    t.deepEqual(
      (await recordsAbout(server, payer.wid, payer.cookie, id)).map((r) => r.kind),
      ['action.allowed', 'action.settled'],
    );
  });
}

test('settle completed with an amount records that amount', async (t) => {
  const id = await allowed(t, payer, 1250);
  const res = await settle(server, payer.key, id, { status: 'completed', amount: 1200 });
  t.is(res.status, 200, res.text);
  t.is(res.body.status, 'settled');
  t.like(res.body.settlement, { status: 'completed', amount: 1200 });
  t.like((await getAction(server, payer.key, id)).body.settlement, { status: 'completed', amount: 1200 });
});

test('settling above the authorized amount is 400 invalid_amount, and the action stays unsettled', async (t) => {
  const id = await allowed(t, payer, 1250);
  const res = await settle(server, payer.key, id, { status: 'completed', amount: 1251 });
  assertError(t, res, 400, 'invalid_amount');
  t.is(res.body.error.message, 'The settled amount EUR 12.51 is above the EUR 12.50 that was authorized.');
  t.deepEqual(res.body.error.errors, [
    { field: 'amount', message: '"amount" must be at most 1250 (minor units: the authorized EUR 12.50)' },
  ]);
  t.is((await getAction(server, payer.key, id)).body.status, 'allowed');
  t.deepEqual(
    (await recordsAbout(server, payer.wid, payer.cookie, id)).map((r) => r.kind),
    ['action.allowed'],
  );
});

test('a non-payment action settles too', async (t) => {
  const decided = await authorize(server, payer.key, { type: 'crm.update', summary: 'Update the Acme record' });
  t.is(decided.body.decision, 'allow', decided.text);
  const res = await settle(server, payer.key, decided.body.id, { status: 'completed' });
  t.is(res.status, 200, res.text);
  t.is(res.body.status, 'settled');
  t.is(res.body.settlement.status, 'completed');
});

test('settling again: 409 already_settled, and the first settlement stands', async (t) => {
  const id = await allowed(t, payer, 800);
  const first = await settle(server, payer.key, id, { status: 'completed', amount: 800 });
  t.is(first.status, 200, first.text);
  for (const body of [{ status: 'completed', amount: 800 }, { status: 'cancelled' }, { status: 'failed' }]) {
    assertError(t, await settle(server, payer.key, id, body), 409, 'already_settled');
  }
  t.deepEqual((await getAction(server, payer.key, id)).body.settlement, first.body.settlement);
  t.is((await recordsAbout(server, payer.wid, payer.cookie, id)).filter((r) => r.kind === 'action.settled').length, 1);
});

test('settling a denied action: 409 not_allowed, and it stays denied', async (t) => {
  const denied = await authorize(server, payer.key, payment(99_999));
  await assertDenied(t, server, payer, denied, 'over_limit');
  for (const status of ['completed', 'failed', 'cancelled']) {
    assertError(t, await settle(server, payer.key, denied.body.id, { status }), 409, 'not_allowed');
  }
  const after = (await getAction(server, payer.key, denied.body.id)).body;
  t.is(after.status, 'denied');
  t.is(after.settlement, null);
});

test('settling an action waiting for approval: 409 not_allowed, and it stays pending', async (t) => {
  const pending = await authorize(
    server,
    payer.key,
    payment(500, { payment: { amount: 500, currency: 'EUR', merchant: 'big.example' } }),
  );
  t.is(pending.body.status, 'pending_approval', pending.text);
  assertError(t, await settle(server, payer.key, pending.body.id, { status: 'completed' }), 409, 'not_allowed');
  const after = (await getAction(server, payer.key, pending.body.id)).body;
  t.is(after.status, 'pending_approval');
  t.is(after.settlement, null);
});

for (const body of [{ status: 'done' }, { status: 'COMPLETED' }, { status: 1 }, {}, { amount: 100 }]) {
  test(`settle with ${JSON.stringify(body)}: 400 invalid_status, and nothing is settled`, async (t) => {
    const id = await allowed(t, payer, 100);
    const res = await settle(server, payer.key, id, body);
    assertError(t, res, 400, 'invalid_status');
    t.true((res.body.error.errors as Array<{ field: string }>).some((e) => e.field === 'status'));
    t.is((await getAction(server, payer.key, id)).body.status, 'allowed');
  });
}

for (const amount of [1.5, '10', -5]) {
  test(`settle with amount ${JSON.stringify(amount)}: 400 invalid_amount, and nothing is settled`, async (t) => {
    const id = await allowed(t, payer, 100);
    const res = await settle(server, payer.key, id, { status: 'completed', amount });
    assertError(t, res, 400, 'invalid_amount');
    t.deepEqual(
      (res.body.error.errors as Array<{ field: string }>).map((e) => e.field),
      ['amount'],
    );
    t.is((await getAction(server, payer.key, id)).body.status, 'allowed');
  });
}

test("settling another agent's action: 404 not_found, and it stays unsettled", async (t) => {
  const id = await allowed(t, payer, 100);
  assertError(t, await settle(server, other.key, id, { status: 'cancelled' }), 404, 'not_found');
  t.is((await getAction(server, payer.key, id)).body.status, 'allowed');
});

test('settling an unknown action: 404 not_found', async (t) => {
  assertError(
    t,
    await settle(server, payer.key, 'act_0000000000000000000000', { status: 'completed' }),
    404,
    'not_found',
  );
});

// Period usage

for (const status of ['failed', 'cancelled'] as const) {
  test(`a ${status} settlement gives its amount back to the period`, async (t) => {
    const fx = await makeAgent(server, [LIMITED], `period-${status}`);
    const first = await allowed(t, fx, 2000);
    const refused = await authorize(server, fx.key, payment(2000));
    await assertDenied(t, server, fx, refused, 'period_limit');
    const settled = await settle(server, fx.key, first, { status });
    t.is(settled.status, 200, settled.text);
    const again = await authorize(server, fx.key, payment(2000));
    t.is(again.body.decision, 'allow', 'the released amount can be spent again');
    const over = await authorize(server, fx.key, payment(1001));
    await assertDenied(t, server, fx, over, 'period_limit');
  });
}

test('a completed settlement with a smaller amount replaces the authorized amount in the period', async (t) => {
  const fx = await makeAgent(server, [LIMITED], 'period-smaller');
  const first = await allowed(t, fx, 3000);
  await assertDenied(t, server, fx, await authorize(server, fx.key, payment(1)), 'period_limit');
  const settled = await settle(server, fx.key, first, { status: 'completed', amount: 1000 });
  t.is(settled.status, 200, settled.text);
  t.is((await authorize(server, fx.key, payment(2000))).body.decision, 'allow', '1000 paid, so 2000 of 3000 are left');
  await assertDenied(t, server, fx, await authorize(server, fx.key, payment(1)), 'period_limit');
});

test('a completed settlement without an amount keeps the authorized amount in the period', async (t) => {
  const fx = await makeAgent(server, [LIMITED], 'period-kept');
  const first = await allowed(t, fx, 2000);
  const settled = await settle(server, fx.key, first, { status: 'completed' });
  t.is(settled.status, 200, settled.text);
  await assertDenied(t, server, fx, await authorize(server, fx.key, payment(1001)), 'period_limit');
  t.is((await authorize(server, fx.key, payment(1000))).body.decision, 'allow');
});

/*
 * A cancelled or failed settlement gives the amount back to the period, but the receipt signed for
 * the action stays valid, online too (valid: true, replayed: false). The agent settles its own
 * actions, with no check, so a rogue agent could loop authorize -> cancel and collect receipts for
 * any multiple of its period limit, each one a merchant verifies as genuine. What the receipts
 * vouch for must stay within the mandate's period limit.
 */
const RECEIPT_LIMIT = 5000;

/** What a looping agent's receipts vouch for, verified online, after four authorize-and-settle rounds. */
async function vouchedAfterSettling(name: string, status: 'cancelled' | 'completed', amount?: number): Promise<number> {
  const looping = await makeAgent(
    server,
    [{ ...PAY_ACME, maxAmount: RECEIPT_LIMIT, periodLimit: { amount: RECEIPT_LIMIT, period: 'day' } }],
    name,
  );
  let vouched = 0;
  for (let i = 0; i < 4; i += 1) {
    const res = await authorize(server, looping.key, payment(RECEIPT_LIMIT));
    if (res.body.decision !== 'allow') break;
    await settle(server, looping.key, res.body.id, amount === undefined ? { status } : { status, amount });
    // The merchant checks the receipt online, afterwards, as the receipt docs let it.
    const verified = await call(server.url, 'POST', '/v1/verify', { json: { receipt: res.body.receipt } });
    if (verified.body.valid === true && verified.body.replayed === false) vouched += verified.body.claims.amt as number;
  }
  return vouched;
}

test('receipts of cancelled actions do not let valid receipts exceed the period limit', async (t) => {
  const vouched = await vouchedAfterSettling('looping-cancel-bot', 'cancelled');
  t.true(
    vouched <= RECEIPT_LIMIT,
    `${vouched} EUR-cents of receipts verify valid and fresh online, under a daily limit of ${RECEIPT_LIMIT}`,
  );
});

test('a completed settlement of 0 does not let a 5000 receipt be re-issued', async (t) => {
  const vouched = await vouchedAfterSettling('looping-zero-bot', 'completed', 0);
  t.true(
    vouched <= RECEIPT_LIMIT,
    `${vouched} EUR-cents of receipts verify valid and fresh online, under a daily limit of ${RECEIPT_LIMIT}`,
  );
});
