import test from 'ava';
import { assertError, bearer, call, csrf, type Reply } from '../helpers/http.js';
import { expectStatus, otherWorkspace } from '../helpers/console.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { poll } from '../helpers/wait.js';
import { stopAndClean } from '../helpers/process.js';
import { CATALOGUE, PROFILES, startGateway, user, type Gateway } from './support.js';

/**
 * Budgets (issue 6): set with an admin key (400 invalid_budget listing fields), the
 * ladder (nudge, downgrade, approval, block), and spend that holds under concurrency: reserved at
 * admission, settled from the vendor's usage, never double counted.
 */
let vendor: MockVendor;
let gw: Gateway;
let admin: string;

// 100 dollars per million tokens each way: "hello" (1 token in, 2 out) costs 300 micro-dollars.
const PRICEY = {
  id: 'pricey',
  provider: 'vendor-o',
  upstreamModel: 'pricey-1',
  priceMicrosPerMTokIn: 100_000_000,
  priceMicrosPerMTokOut: 100_000_000,
  quality: 5,
  jurisdiction: { domicile: 'US', region: 'us-east' },
};

const budget = (body: unknown, key = admin) =>
  call(gw.server.url, 'POST', '/v1/admin/budgets', { headers: bearer(key), json: body });
const spendOf = async (id: string) =>
  (
    (await call(gw.server.url, 'GET', '/v1/admin/budgets', { headers: bearer(admin) })).body.data as Array<{
      id: string;
      spentMicros: number;
    }>
  ).find((b) => b.id === id)!.spentMicros;
const ask = (key: string, extra: Record<string, string> = {}) =>
  call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: { ...bearer(key), ...extra },
    json: { model: 'pricey', messages: user('hello'), max_tokens: 3 },
  });

test.before(async () => {
  vendor = await startMockVendor();
  gw = await startGateway(vendor, {
    models: [...CATALOGUE, PRICEY],
    policyProfiles: [...PROFILES, { id: 'pricey-only', models: ['pricey'] }],
  });
  admin = await gw.key({ scope: 'admin' });
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
});

test('400 invalid_budget lists each field at fault; only an admin key sets budgets', async (t) => {
  const res = await budget({
    scope: { kind: 'galaxy', id: 'x' },
    amountMicros: 0,
    period: 'year',
    ladder: [
      { at: 0.9, step: 'block' },
      { at: 0.5, step: 'nudge' },
    ],
  });
  assertError(t, res, 400, 'invalid_budget');
  const fields = res.body.error.errors.map((e: { field: string }) => e.field);
  for (const f of ['scope.kind', 'amountMicros', 'period', 'ladder'])
    t.true(fields.includes(f), `${f} in ${fields.join(', ')}`);
  assertError(
    t,
    await budget({ scope: { kind: 'team', id: 'x' }, amountMicros: 10, period: 'day' }, await gw.key({})),
    403,
    'forbidden',
  );
  const ok = await budget({ scope: { kind: 'team', id: 'nobody' }, amountMicros: 10, period: 'week' });
  t.is(ok.status, 201, ok.text);
  t.like(ok.body, {
    scope: { kind: 'team', id: 'nobody' },
    amountMicros: 10,
    period: 'week',
    ladder: [{ at: 1, step: 'block' }],
  });
  t.regex(ok.body.id, /^bud_[0-9A-Za-z]{22}$/);
});

test("a budget binds only its own workspace: another workspace's id, key or agent is 400 invalid_budget naming scope.id", async (t) => {
  const other = await otherWorkspace(gw.server);
  const otherKey = expectStatus(await other.send('POST', '/keys', { scope: 'inference', name: 'theirs' }), 201, 'key');
  const otherAgent = expectStatus(await other.send('POST', '/agents', { name: 'theirs' }), 201, 'agent');
  const ownAgent = expectStatus(await gw.owner.send('POST', '/agents', { name: 'budgeted' }), 201, 'agent');
  const ownKey = expectStatus(
    await gw.owner.send('POST', '/keys', { scope: 'inference', name: 'budgeted' }),
    201,
    'key',
  );
  const foreign = [
    { kind: 'workspace', id: other.wid },
    { kind: 'key', id: otherKey.body.id as string },
    { kind: 'agent', id: otherAgent.body.id as string },
  ];
  for (const scope of foreign) {
    const body = { scope, amountMicros: 10, period: 'day' };
    for (const res of [await budget(body), await gw.owner.send('POST', '/budgets', body)]) {
      assertError(t, res, 400, 'invalid_budget');
      t.deepEqual(
        res.body.error.errors.map((e: { field: string }) => e.field),
        ['scope.id'],
        res.text,
      );
    }
  }
  // Counted by scope: the file's other tests add budgets of their own meanwhile.
  const listed = (await call(gw.server.url, 'GET', '/v1/admin/budgets', { headers: bearer(admin) })).body
    .data as Array<{
    scope: { kind: string; id: string };
  }>;
  t.deepEqual(
    listed.filter((b) => foreign.some((f) => f.kind === b.scope.kind && f.id === b.scope.id)),
    [],
    'nothing was created',
  );
  for (const scope of [
    { kind: 'workspace', id: gw.owner.wid },
    { kind: 'key', id: ownKey.body.id as string },
    { kind: 'agent', id: ownAgent.body.id as string },
  ]) {
    const res = await budget({ scope, amountMicros: 1_000_000_000, period: 'month' });
    t.is(res.status, 201, res.text);
    // The list read above names budgets by the same scope: this one is found there.
    const again = (await call(gw.server.url, 'GET', '/v1/admin/budgets', { headers: bearer(admin) })).body
      .data as Array<{ scope: { kind: string; id: string } }>;
    t.true(again.some((b) => b.scope.kind === scope.kind && b.scope.id === scope.id));
  }
});

test('prototype keys in a budget body are removed before validation: a 400 of the catalogue, never a 500', async (t) => {
  const valid = { scope: { kind: 'team', id: 'proto' }, amountMicros: 10, period: 'day' };
  for (const body of ['{"constructor":{"prototype":{"x":1}}}', '{"prototype":{},"scope":{"constructor":1}}']) {
    for (const res of [
      await call(gw.server.url, 'POST', '/v1/admin/budgets', {
        headers: { ...bearer(admin), 'content-type': 'application/json' },
        body,
      }),
      await call(gw.server.url, 'POST', gw.owner.api('/budgets'), {
        headers: { cookie: gw.owner.cookie, ...csrf, 'content-type': 'application/json' },
        body,
      }),
    ]) {
      assertError(t, res, 400, 'invalid_budget');
      t.false(res.text.includes('constructor'), res.text);
    }
  }
  // With every other field right, the stripped keys leave a budget like any other.
  const made = await call(gw.server.url, 'POST', gw.owner.api('/budgets'), {
    headers: { cookie: gw.owner.cookie, ...csrf, 'content-type': 'application/json' },
    body: JSON.stringify({ constructor: { prototype: { x: 1 } }, ...valid, prototype: 1 }),
  });
  t.is(made.status, 201, made.text);
  t.deepEqual(Object.keys(made.body.scope as object).sort(), ['id', 'kind']);
  t.is(({} as Record<string, unknown>).x, undefined, 'no prototype was touched');
});

test.serial(
  'the ladder: nudge with an advisory, downgrade to a cheaper model, then block until the period ends',
  async (t) => {
    const key = await gw.key({ defaultTaskClass: 'general', team: 'ladder' });
    const made = await budget({
      scope: { kind: 'team', id: 'ladder' },
      amountMicros: 1000,
      period: 'day',
      ladder: [
        { at: 0.5, step: 'nudge' },
        { at: 0.8, step: 'downgrade' },
        { at: 1, step: 'block' },
      ],
    });
    const quality = { 'x-svc-objective': 'quality' };
    const answers: Reply[] = [];
    for (let i = 0; i < 3; i += 1) answers.push(await ask(key, quality));
    t.deepEqual(
      answers.map((a) => a.headers['x-svc-routed-to']),
      ['pricey', 'pricey', 'pricey'],
    );
    t.deepEqual(
      answers.map((a) => a.headers['x-svc-cost-micros']),
      ['300', '300', '300'],
    );
    t.is(answers[0]!.headers['x-svc-advisory'], undefined);
    t.is(answers[0]!.headers['x-svc-budget-scope'], 'team:ladder');
    t.is(answers[2]!.headers['x-svc-enforcement'], 'nudge');
    t.regex(String(answers[2]!.headers['x-svc-advisory']), /60% of the day budget of team:ladder/);
    const downgraded = await ask(key, quality);
    t.is(downgraded.headers['x-svc-enforcement'], 'downgrade', downgraded.text);
    t.is(downgraded.headers['x-svc-routed-to'], 'small', 'the cheapest eligible model');
    t.is(downgraded.headers['x-svc-yield-multiplier'], String((200_000_000 / 750_000).toFixed(2)));
    await ask(await gw.key({ defaultTaskClass: 'general', team: 'ladder', policyProfile: 'pricey-only' }), quality);
    const blocked = await ask(key, quality);
    assertError(t, blocked, 429, 'budget_exhausted');
    // 1,000 micro-dollars, as people read dollars.
    t.regex(blocked.body.error.message, /^The day budget of team:ladder \(USD 0\.001\) is used up until \d{4}-/);
    t.regex(String(blocked.headers['retry-after']), /^\d+$/);
    t.true(Number(blocked.headers['retry-after']) <= 86_400);
    t.is(blocked.headers['x-svc-budget-scope'], 'team:ladder');
    t.true((await spendOf(made.body.id)) >= 1200);
  },
);

test.serial('402 approval_required names the workspace owner', async (t) => {
  const key = await gw.key({ defaultTaskClass: 'general', team: 'approvals', policyProfile: 'pricey-only' });
  await budget({
    scope: { kind: 'team', id: 'approvals' },
    amountMicros: 1000,
    period: 'month',
    ladder: [
      { at: 0.5, step: 'approval' },
      { at: 1, step: 'block' },
    ],
  });
  t.is((await ask(key)).status, 200);
  t.is((await ask(key)).status, 200);
  const before = vendor.count('pricey-1');
  const res = await ask(key);
  assertError(t, res, 402, 'approval_required');
  t.like(res.body.error.owner, { email: 'admin@localhost' });
  t.regex(res.body.error.message, /admin@localhost/);
  t.is(vendor.count('pricey-1'), before, 'nothing was sent');
});

test.serial(
  '50 concurrent calls near the ceiling overshoot it by at most one reservation, and spend is counted once',
  async (t) => {
    const key = await gw.key({ defaultTaskClass: 'general', team: 'crowd', policyProfile: 'pricey-only' });
    const made = await budget({ scope: { kind: 'team', id: 'crowd' }, amountMicros: 3000, period: 'day' });
    const answers = await Promise.all(Array.from({ length: 50 }, () => ask(key)));
    const served = answers.filter((a) => a.status === 200);
    const blocked = answers.filter((a) => a.status === 429);
    t.is(
      served.length + blocked.length,
      50,
      answers
        .filter((a) => a.status !== 200 && a.status !== 429)
        .map((a) => a.text)
        .join('\n'),
    );
    t.true(served.length >= 1);
    for (const b of blocked) t.is(b.body.error.type, 'budget_exhausted');
    const charged = served.reduce((sum, a) => sum + Number(a.headers['x-svc-cost-micros']), 0);
    // "hello" at max_tokens 3: 2 tokens in (estimated from 5 characters) and 3 out at 100 per token.
    const reservation = 500;
    t.true(charged <= 3000 + reservation, `charged ${charged}`);
    t.is(await spendOf(made.body.id), charged, "the spend is exactly what the vendor's usage cost, once");
    // One at a time the rest of the budget is used, and then it holds.
    let last = await ask(key);
    for (let i = 0; i < 20 && last.status === 200; i += 1) last = await ask(key);
    assertError(t, last, 429, 'budget_exhausted');
    const spent = await spendOf(made.body.id);
    t.true(spent >= 3000 && spent <= 3000 + reservation, `spent ${spent}`);
  },
);

test.serial('a fallback is charged at the price of the model that served it', async (t) => {
  const key = await gw.key({ defaultTaskClass: 'general', team: 'fallback', policyProfile: 'us-only' });
  const made = await budget({ scope: { kind: 'team', id: 'fallback' }, amountMicros: 1_000_000, period: 'day' });
  vendor.fault('small-2026', { kind: 'status', status: 500 });
  const res = await call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: bearer(key),
    json: { model: 'small', messages: user('hello'), max_tokens: 3 },
  });
  t.is(res.status, 200, res.text);
  t.is(res.headers['x-svc-routed-to'], 'large');
  // large: 1 token in at 3,000,000 and 2 out at 12,000,000 per million: 27 micro-dollars.
  t.is(res.headers['x-svc-cost-micros'], '27');
  t.is(await spendOf(made.body.id), 27);
});

test.serial('a stream cut before the vendor reported usage is charged what was reserved, never nothing', async (t) => {
  const key = await gw.key({ defaultTaskClass: 'general', team: 'cut', policyProfile: 'pricey-only' });
  const made = await budget({ scope: { kind: 'team', id: 'cut' }, amountMicros: 1_000_000, period: 'day' });
  vendor.fault('pricey-1', { kind: 'cut', afterChunks: 2 });
  const stream = await gw.openai(key).chat.completions.create({
    model: 'pricey',
    messages: user('one two three four five six'),
    max_tokens: 10,
    stream: true,
  });
  await t.throwsAsync(async () => {
    for await (const _ of stream) {
      /* read until the cut */
    }
  });
  // Reserved: 6 prompt tokens (the tokenizer's count of the six words) and 10 output tokens at
  // 100 micro-dollars each.
  const spent = await poll(
    () => spendOf(made.body.id),
    (micros) => micros !== 0,
    { timeoutMs: 1_000 },
  );
  t.is(spent, 1600);
});
