import test from 'ava';
import { assertError } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { authorize, payment, PAY_ACME } from '../helpers/gate.js';
import { makeAgent, recordsAbout, recordsBy, settle } from './support.js';

/**
 * Real concurrency against one server: racing authorizations cannot together overrun a period
 * limit, and racing settlements settle an action once (src/gate/service.ts rules).
 */

let server: ServedInProcess;

test.before(async () => {
  server = await serveInProcess();
});

test.after.always(() => stopAndClean(server));

test('40 concurrent payments of 1000 under a period limit of 10000: exactly 10 allowed, 30 denied period_limit', async (t) => {
  const fx = await makeAgent(
    server,
    [{ ...PAY_ACME, maxAmount: 1000, periodLimit: { amount: 10_000, period: 'day' } }],
    'racer',
  );
  const answers = await Promise.all(
    Array.from({ length: 40 }, (_, i) => authorize(server, fx.key, payment(1000, { summary: `Pay Acme, part ${i}` }))),
  );
  for (const a of answers) t.is(a.status, 200, a.text);
  const allowed = answers.filter((a) => a.body.decision === 'allow');
  const denied = answers.filter((a) => a.body.decision === 'deny');
  t.is(allowed.length, 10);
  t.is(denied.length, 30);
  for (const d of denied) t.deepEqual(d.body.signals, ['period_limit']);
  for (const a of allowed) t.is(typeof a.body.receipt, 'string');
  t.is(new Set(answers.map((a) => a.body.id)).size, 40, 'every request is its own action');

  const byAgent = await recordsBy(server, fx);
  t.is(byAgent.filter((r) => r.kind === 'action.allowed').length, 10);
  t.is(byAgent.filter((r) => r.kind === 'action.denied').length, 30);
  const allowedTotal = byAgent
    .filter((r) => r.kind === 'action.allowed')
    .reduce((sum, r) => sum + (r.data.payment.amount as number), 0);
  t.is(allowedTotal, 10_000, 'never over the period limit');

  const next = await authorize(server, fx.key, payment(1));
  t.is(next.body.decision, 'deny');
  t.deepEqual(next.body.signals, ['period_limit']);
});

test('concurrent payments of different agents do not share a period limit', async (t) => {
  const rules = [{ ...PAY_ACME, maxAmount: 1000, periodLimit: { amount: 5000, period: 'day' } }];
  const [a, b] = await Promise.all([makeAgent(server, rules, 'left'), makeAgent(server, rules, 'right')]);
  const answers = await Promise.all(
    Array.from({ length: 20 }, (_, i) => authorize(server, (i % 2 === 0 ? a : b).key, payment(1000))),
  );
  const allowedFor = (agentId: string) =>
    answers.filter((r) => r.body.agentId === agentId && r.body.decision === 'allow').length;
  t.is(allowedFor(a.agentId), 5);
  t.is(allowedFor(b.agentId), 5);
});

test('10 concurrent settlements of one action: one settles it, the rest get 409 already_settled', async (t) => {
  const fx = await makeAgent(server, [PAY_ACME], 'settler');
  const decided = await authorize(server, fx.key, payment(1000));
  t.is(decided.body.decision, 'allow', decided.text);
  const statuses = ['completed', 'failed', 'cancelled'];
  const answers = await Promise.all(
    Array.from({ length: 10 }, (_, i) => settle(server, fx.key, decided.body.id, { status: statuses[i % 3] })),
  );
  const ok = answers.filter((r) => r.status === 200);
  t.is(ok.length, 1);
  for (const r of answers.filter((x) => x.status !== 200)) assertError(t, r, 409, 'already_settled');
  const settled = (await recordsAbout(server, fx.wid, fx.cookie, decided.body.id)).filter(
    (r) => r.kind === 'action.settled',
  );
  t.is(settled.length, 1);
  t.is(settled[0]!.data.status, ok[0]!.body.settlement.status);
});

test('concurrent releases and payments never leave the period over its limit', async (t) => {
  const fx = await makeAgent(
    server,
    [{ ...PAY_ACME, maxAmount: 1000, periodLimit: { amount: 5000, period: 'day' } }],
    'releaser',
  );
  const first = await Promise.all(Array.from({ length: 5 }, () => authorize(server, fx.key, payment(1000))));
  t.true(first.every((r) => r.body.decision === 'allow'));
  // Cancel three while ten more payments race: at most three of them can be allowed.
  const [cancels, racers] = await Promise.all([
    Promise.all(first.slice(0, 3).map((r) => settle(server, fx.key, r.body.id, { status: 'cancelled' }))),
    Promise.all(Array.from({ length: 10 }, () => authorize(server, fx.key, payment(1000)))),
  ]);
  t.true(cancels.every((r) => r.status === 200));
  const allowedNow = racers.filter((r) => r.body.decision === 'allow').length;
  t.true(allowedNow <= 3, `allowed ${allowedNow}`);
  // Whatever the interleaving, the room left afterwards is exactly what was released and not reused.
  const rest = await Promise.all(Array.from({ length: 5 }, () => authorize(server, fx.key, payment(1000))));
  t.is(allowedNow + rest.filter((r) => r.body.decision === 'allow').length, 3);
});
