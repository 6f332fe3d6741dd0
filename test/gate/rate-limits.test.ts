import test from 'ava';
import { assertError, type Reply } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { authorize, payment, PAY_ACME } from '../helpers/gate.js';
import { authorizeRaw, getAction, makeAgent, rateHeaders, recordsBy, settle } from './support.js';
import { clearOfMinuteEdge } from '../helpers/wait.js';

// Rate-limit windows are whole minutes of the clock: each test counts inside one.
test.beforeEach(() => clearOfMinuteEdge());

/**
 * The gate's per-agent rate limit: every answer after authentication carries
 * ratelimit-limit, ratelimit-remaining and ratelimit-reset; past the limit, 429 rate_limited
 * with retry-after. One server at the default limit, one started with SVC_GATE_RATE_PER_MINUTE=5.
 */

let server: ServedInProcess;
let tight: ServedInProcess;

test.before(async () => {
  [server, tight] = await Promise.all([serveInProcess(), serveInProcess({ env: { SVC_GATE_RATE_PER_MINUTE: '5' } })]);
});

test.after.always(async () => {
  await Promise.all([stopAndClean(server), stopAndClean(tight)]);
});

function assertRateHeaders(
  t: import('ava').ExecutionContext,
  res: Reply,
  limit: number,
): { remaining: number; reset: number } {
  const h = rateHeaders(res);
  t.is(h.limit, limit, `ratelimit-limit on ${res.status}`);
  t.true(
    Number.isInteger(h.remaining) && h.remaining >= 0,
    `ratelimit-remaining on ${res.status}: ${res.headers['ratelimit-remaining']}`,
  );
  t.true(
    Number.isInteger(h.reset) && h.reset >= 1 && h.reset <= 60,
    `ratelimit-reset on ${res.status}: ${res.headers['ratelimit-reset']}`,
  );
  return h;
}

test('every gate answer (200, 404, 409, 400) carries the ratelimit headers, remaining counting down', async (t) => {
  const fx = await makeAgent(server, [PAY_ACME], 'counted');
  const answers: Reply[] = [];
  const decided = await authorize(server, fx.key, payment(100));
  t.is(decided.status, 200);
  answers.push(decided);
  const settled = await settle(server, fx.key, decided.body.id, { status: 'completed' });
  t.is(settled.status, 200);
  answers.push(settled);
  const again = await settle(server, fx.key, decided.body.id, { status: 'completed' });
  assertError(t, again, 409, 'already_settled');
  answers.push(again);
  const unknown = await getAction(server, fx.key, 'act_0000000000000000000000');
  assertError(t, unknown, 404, 'not_found');
  answers.push(unknown);
  const invalid = await authorize(server, fx.key, payment(12.5));
  assertError(t, invalid, 400, 'invalid_request');
  answers.push(invalid);
  const badStatus = await settle(server, fx.key, decided.body.id, { status: 'done' });
  assertError(t, badStatus, 400, 'invalid_status');
  answers.push(badStatus);
  const read = await getAction(server, fx.key, decided.body.id);
  t.is(read.status, 200);
  answers.push(read);

  const remaining = answers.map((r) => assertRateHeaders(t, r, 600).remaining);
  t.deepEqual(
    remaining,
    remaining.map((_, i) => 599 - i),
    'each answer counts one request',
  );
});

test('the sixth request in a minute: 429 rate_limited with retry-after and the ratelimit headers', async (t) => {
  const fx = await makeAgent(tight, [PAY_ACME], 'chatty');
  for (let i = 0; i < 5; i++) {
    const res = await authorize(tight, fx.key, payment(100 + i));
    t.is(res.status, 200, res.text);
    t.is(assertRateHeaders(t, res, 5).remaining, 4 - i);
  }
  const sixth = await authorize(tight, fx.key, payment(200));
  assertError(t, sixth, 429, 'rate_limited');
  const h = assertRateHeaders(t, sixth, 5);
  t.is(h.remaining, 0);
  const retryAfter = Number(sixth.headers['retry-after']);
  t.true(
    Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60,
    `retry-after: ${sixth.headers['retry-after']}`,
  );

  // Every gate route is limited, and a refused request decides nothing.
  assertError(t, await getAction(tight, fx.key, 'act_0000000000000000000000'), 429, 'rate_limited');
  assertError(
    t,
    await settle(tight, fx.key, 'act_0000000000000000000000', { status: 'completed' }),
    429,
    'rate_limited',
  );
  const decisions = await recordsBy(tight, fx);
  t.is(decisions.length, 5);
});

test('another agent is not affected by one agent using up its limit', async (t) => {
  const [noisy, quiet] = await Promise.all([
    makeAgent(tight, [PAY_ACME], 'noisy'),
    makeAgent(tight, [PAY_ACME], 'quiet'),
  ]);
  for (let i = 0; i < 6; i++) await getAction(tight, noisy.key, 'act_0000000000000000000000');
  assertError(t, await getAction(tight, noisy.key, 'act_0000000000000000000000'), 429, 'rate_limited');
  const res = await authorize(tight, quiet.key, payment(100));
  t.is(res.status, 200, res.text);
  t.is(assertRateHeaders(t, res, 5).remaining, 4);
});

test('10 concurrent requests of one agent under a limit of 5: exactly 5 answered, 5 rate_limited', async (t) => {
  const fx = await makeAgent(tight, [PAY_ACME], 'burst');
  const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => authorize(tight, fx.key, payment(10 + i))));
  const ok = answers.filter((r) => r.status === 200);
  const limited = answers.filter((r) => r.status === 429);
  t.is(ok.length, 5);
  t.is(limited.length, 5);
  for (const r of limited) assertError(t, r, 429, 'rate_limited');
  t.deepEqual(ok.map((r) => rateHeaders(r).remaining).sort(), [0, 1, 2, 3, 4]);
  const decisions = await recordsBy(tight, fx);
  t.is(decisions.length, 5);
});

test('a body that is not JSON is still a gate answer: it carries the ratelimit headers and counts against the limit', async (t) => {
  const fx = await makeAgent(tight, [PAY_ACME], 'garbled');
  const garbled = () => authorizeRaw(tight, fx.key, '{"type": "payment",');
  for (let i = 0; i < 5; i++) {
    const res = await garbled();
    assertError(t, res, 400, 'invalid_json');
    t.is(assertRateHeaders(t, res, 5).remaining, 4 - i);
  }
  const sixth = await garbled();
  assertError(t, sixth, 429, 'rate_limited');
  t.truthy(sixth.headers['retry-after']);
  assertError(t, await authorize(tight, fx.key, payment(100)), 429, 'rate_limited');
});
