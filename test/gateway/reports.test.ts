import test from 'ava';
import { assertError, bearer, call } from '../helpers/http.js';
import { expectStatus, type LedgerRecord } from '../helpers/console.js';
import { manualClock } from '../helpers/clock.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { startGateway, user, type Gateway } from '../gateway/support.js';

/**
 * The console's report routes (issue 21 item 4), over a real server with the mock vendor:
 * - GET /api/w/{wid}/usage: calls and spend per hour or day, by model, team or key, every bucket
 *   of the window answered; a window of too many buckets is 400 invalid_request.
 * - GET and POST /api/w/{wid}/budgets: budgets with what they used and the ladder's step reached.
 * - GET /api/w/{wid}/ledger with filters and newest first (the checkpoint and "verify now":
 *   test/ledger/verify.test.ts).
 * Roles are checked for every route by test/console/role-table.test.ts.
 */
const DAY = 86_400_000;
// Ten in the morning, UTC, today: calls land in today's bucket, and tomorrow's after a day.
const START = Math.floor(Date.now() / DAY) * DAY + 10 * 3_600_000;
const clock = manualClock(START);

let vendor: MockVendor;
let gw: Gateway;

const chat = (key: string, model: string) =>
  call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: bearer(key),
    json: { model, messages: user('hello') },
  });
const iso = (ms: number) => new Date(ms).toISOString();

test.before(async () => {
  vendor = await startMockVendor();
  // Sessions outlive the day the clock moves on.
  gw = await startGateway(vendor, {}, { SVC_SESSION_TTL_HOURS: '72' }, { clock });
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
});

test.serial('usage answers each day of the window, split by model, team and key', async (t) => {
  const search = await gw.key({ name: 'search-key', team: 'search', defaultTaskClass: 'general' });
  const ads = await gw.key({ name: 'ads-key', team: 'ads', defaultTaskClass: 'general' });
  const first = [await chat(search, 'small'), await chat(search, 'small')];
  clock.advance(DAY);
  const second = await chat(ads, 'large');
  for (const a of [...first, second]) t.is(a.status, 200, a.text);
  const cost = (answers: typeof first) => answers.reduce((s, a) => s + Number(a.headers['x-svc-cost-micros']), 0);

  const q = `from=${iso(START - 2 * DAY)}&to=${iso(START - 10 * 3_600_000 + 2 * DAY)}`;
  const byModel = expectStatus(await gw.owner.get(`/usage?${q}&by=model&bucket=day`), 200, 'usage').body;
  t.is(byModel.bucket, 'day');
  t.is(byModel.from, iso(START - 2 * DAY - 10 * 3_600_000), 'from moves back to the start of its day');
  t.is(byModel.buckets.length, 4);
  t.deepEqual(
    byModel.buckets.map((b: { calls: number }) => b.calls),
    [0, 0, 2, 1],
  );
  // The gateway routes by task class: the model that served each call is in x-svc-routed-to.
  const served = (a: (typeof first)[number]) => String(a.headers['x-svc-routed-to']);
  t.deepEqual(byModel.buckets[2].groups, { [served(first[0]!)]: { calls: 2, costMicros: cost(first) } });
  t.deepEqual(byModel.buckets[3].groups, { [served(second)]: { calls: 1, costMicros: cost([second]) } });
  t.like(byModel.total, { calls: 3, failed: 0, costMicros: cost([...first, second]) });
  t.is(
    byModel.groups.reduce((n: number, g: { calls: number }) => n + g.calls, 0),
    3,
  );

  const byTeam = expectStatus(await gw.owner.get(`/usage?${q}&by=team&bucket=hour`), 200, 'usage').body;
  t.is(byTeam.buckets.length, 4 * 24 - 10, "from ten o'clock two days ago, hour by hour");
  t.deepEqual(byTeam.groups.map((g: { group: string; calls: number }) => [g.group, g.calls]).sort(), [
    ['ads', 1],
    ['search', 2],
  ]);
  const byKey = expectStatus(await gw.owner.get(`/usage?${q}&by=key`), 200, 'usage').body;
  t.is(byKey.groups.length, 2);
  t.true(byKey.groups.every((g: { group: string }) => g.group.startsWith('key_')));
});

test.serial('usage refuses a window of too many buckets, or one that ends before it starts', async (t) => {
  assertError(
    t,
    await gw.owner.get(`/usage?from=${iso(START - 30 * DAY)}&to=${iso(START)}&bucket=hour`),
    400,
    'invalid_request',
  );
  assertError(t, await gw.owner.get(`/usage?from=${iso(START)}&to=${iso(START - DAY)}`), 400, 'invalid_request');
  assertError(t, await gw.owner.get(`/usage?to=${iso(START)}`), 400, 'invalid_request');
});

test.serial('a budget set in the console shows what it used and the step it reached', async (t) => {
  const made = await gw.owner.send('POST', '/budgets', {
    scope: { kind: 'team', id: 'search' },
    amountMicros: 1,
    period: 'day',
    ladder: [{ at: 0.5, step: 'nudge' }],
  });
  t.is(made.status, 201, made.text);
  t.regex(made.body.id, /^bud_/);
  assertError(
    t,
    await gw.owner.send('POST', '/budgets', { scope: { kind: 'moon', id: 'x' }, amountMicros: 0, period: 'day' }),
    400,
    'invalid_budget',
  );

  const before = expectStatus(await gw.owner.get('/budgets'), 200, 'budgets').body.data;
  t.like(before[0], { id: made.body.id, usedMicros: 0, share: 0, step: null, period: 'day' });
  const key = await gw.key({ name: 'spender', team: 'search', defaultTaskClass: 'general' });
  const spent = await chat(key, 'large');
  t.is(spent.status, 200, spent.text);
  await gw.server.app.services.calls.flush();
  const after = expectStatus(await gw.owner.get('/budgets'), 200, 'budgets').body.data[0];
  t.is(after.usedMicros, Number(spent.headers['x-svc-cost-micros']));
  t.true(after.share >= 1);
  t.is(after.step, 'nudge');
  t.is(after.periodEnd, iso(Math.floor(clock.now() / DAY) * DAY + DAY));
});

test.serial('the ledger filters by kind, actor and subject, newest first', async (t) => {
  const all = await gw.owner.ledger();
  const budgets = all.filter((r) => r.kind.startsWith('budget'));
  t.true(budgets.length >= 1);
  const byKind = expectStatus(await gw.owner.get('/ledger?kind=budget&order=desc'), 200, 'ledger').body;
  t.deepEqual(
    byKind.data.map((r: LedgerRecord) => r.index),
    budgets.map((r) => r.index).reverse(),
  );
  t.is(byKind.next, null);

  const newest = expectStatus(await gw.owner.get('/ledger?order=desc&limit=2'), 200, 'ledger').body;
  t.deepEqual(
    newest.data.map((r: LedgerRecord) => r.index),
    [all.length - 1, all.length - 2],
  );
  t.is(newest.next, all.length - 2);
  const older = expectStatus(
    await gw.owner.get(`/ledger?order=desc&limit=200&before=${newest.next}`),
    200,
    'ledger',
  ).body;
  t.is(older.data[0].index, all.length - 3);
  t.is(older.next, null);

  const actor = all[all.length - 1]!.actor;
  const bare = actor.slice(actor.indexOf(':') + 1);
  const byActor = expectStatus(await gw.owner.get(`/ledger?actor=${encodeURIComponent(bare)}&limit=200`), 200, 'ledger')
    .body.data as LedgerRecord[];
  t.deepEqual(
    byActor.map((r) => r.index),
    all.filter((r) => r.actor === actor).map((r) => r.index),
  );
  const subject = budgets[0]!.subject;
  t.deepEqual(
    expectStatus(await gw.owner.get(`/ledger?subject=${subject}`), 200, 'ledger').body.data.map(
      (r: LedgerRecord) => r.id,
    ),
    all.filter((r) => r.subject === subject).map((r) => r.id),
  );
  t.deepEqual(
    expectStatus(await gw.owner.get(`/ledger?from=${iso(clock.now() + DAY)}`), 200, 'ledger').body,
    { data: [], next: null },
    'nothing was recorded after tomorrow',
  );
  assertError(t, await gw.owner.get('/ledger?order=desc&after=3'), 400, 'invalid_request');
  assertError(t, await gw.owner.get('/ledger?before=3'), 400, 'invalid_request');
});
