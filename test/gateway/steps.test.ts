import test from 'ava';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { App } from '../../src/app.js';
import { AppError } from '../../src/errors/app-error.js';
import { createBudgets } from '../../src/gateway/budgets.js';
import { createResponseCache } from '../../src/gateway/cache.js';
import { createLimits } from '../../src/gateway/limits.js';
import { createDeploymentHealth } from '../../src/gateway/deployments.js';
import { account } from '../../src/gateway/steps/account.js';
import { admit } from '../../src/gateway/steps/admit.js';
import { budget } from '../../src/gateway/steps/budget.js';
import type { GatewayContext, GatewayEnv, Step } from '../../src/gateway/steps/context.js';
import { dataLoss } from '../../src/gateway/steps/data-loss.js';
import { dryRun } from '../../src/gateway/steps/dry-run.js';
import { CHECKS, createContext, runSteps, STEPS } from '../../src/gateway/steps/index.js';
import { killSwitch } from '../../src/gateway/steps/kill-switch.js';
import { createTokenCounter, loadTokenizer } from '../../src/gateway/tokens.js';
import { randomIds } from '../../src/lib/ids.js';
import type { GatewayModel } from '../../src/settings/schema.js';
import type { KeyRecord } from '../../src/keys/records.js';
import { manualClock } from '../helpers/clock.js';
import { removeDir, ROOT, tempDir } from '../helpers/process.js';
import { withStore } from '../helpers/store.js';

/**
 * The gateway's request path as ordered steps (issue 16 item 4), each run alone over a real store:
 * the order, the runner's rules (a refusal stops the path and is seen with its step; the budget
 * admission takes its reservation in its own store write), and what single steps read and write of the
 * context.
 */
const WID = 'wsp_cccccccccccccccccccccc';

const model = (id: string, price: number): GatewayModel => ({
  id,
  provider: 'vendor-o',
  upstreamModel: `${id}-1`,
  priceMicrosPerMTokIn: price,
  priceMicrosPerMTokOut: price,
  quality: 1,
  latency: 1,
  deployments: [{ provider: 'vendor-o', upstreamModel: `${id}-1`, weight: 1 }],
  jurisdiction: { domicile: 'US', region: 'us-east' },
  taskClasses: ['*'],
});
const SMALL = model('small', 1_000_000);
const LARGE = model('large', 5_000_000);

const key: KeyRecord = {
  id: 'key_cccccccccccccccccccccc',
  workspaceId: WID,
  scope: 'inference',
  name: 'k',
  principal: 'alice',
  team: 'search',
  defaultTaskClass: 'general',
  policyProfile: null,
  agentId: null,
  hash: 'x',
  createdAt: '2026-11-24T00:00:00.000Z',
  createdBy: 'user:usr_x',
  revokedAt: null,
};

function envOf(app: App): GatewayEnv {
  const settings = { ...app.settings.gateway, enforcement: 'enforce' as const, models: [SMALL, LARGE] };
  return {
    store: app.store,
    clock: app.clock,
    ids: randomIds,
    settings,
    calls: app.services.calls,
    budgets: app.services.budgets,
    limits: createLimits({ store: app.store, clock: app.clock, log: app.log, settings }),
    cache: createResponseCache({ store: app.store, clock: app.clock, log: app.log }),
    health: createDeploymentHealth({
      failures: 3,
      cooldownMs: 60_000,
      now: () => app.clock.now(),
      models: settings.models,
    }),
    providers: new Map(),
    profiles: new Map(),
    catalogue: new Map(settings.models.map((m) => [m.id, m])),
    upstreamOf: () => {
      throw new Error('nothing is sent in these tests');
    },
    tokens: createTokenCounter(),
    allowances: () => ({ people: null, monthlyRequests: null }),
    seats: { graceDays: 0 },
  };
}

const contextOf = (env: GatewayEnv, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  createContext(
    {
      shape: 'openai',
      body,
      key,
      headers,
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      signal: new AbortController().signal,
      startedAt: performance.now(),
    },
    env,
  );

async function inStore(fn: (app: App, env: GatewayEnv) => Promise<void> | void): Promise<void> {
  const dir = await tempDir();
  try {
    await withStore(dir, (app) => fn(app, envOf(app)));
  } finally {
    await removeDir(dir);
  }
}

const hello = { model: 'small', messages: [{ role: 'user', content: 'hello' }] };

test('the steps, in order: every check before the one step that sends', (t) => {
  t.deepEqual(
    STEPS.map((s) => s.name),
    [
      'kill-switch',
      'plan',
      'classify',
      'route',
      'carry',
      'data-loss',
      'limit',
      'budget',
      'admit',
      'cache',
      'dry-run',
      'upstream',
      'account',
      'cache-write',
    ],
  );
});

/** The steps the docs tell within another step's item, not as one of their own. */
const TOLD_WITHIN = [
  'admit', // the month's count (Plan) and the headers that say how the request is served
  'account', // the call's cost and record, after the list
  'cache-write', // the answer kept (Response cache)
];

test('the table alone gives the order: the docs list the steps in it, numbered in turn, and so does the step map', async (t) => {
  const order = STEPS.map((s) => s.name);
  const docs = await readFile(join(ROOT, 'docs/gateway.md'), 'utf8');
  const section = /### What happens to each request\n([\s\S]*?)\n### /.exec(docs)?.[1] ?? '';
  const numbers = [...section.matchAll(/^(\d+)\. /gm)].map((m) => Number(m[1]));
  t.true(numbers.length > 5, 'the docs section is found');
  t.deepEqual(
    numbers,
    numbers.map((_, i) => i + 1),
    'numbered 1, 2, 3, ...',
  );
  const named = [...section.matchAll(/\*\*[^*]+\*\* \(`([a-z-]+)`/g)].map((m) => m[1]!);
  for (const name of named) t.true(order.includes(name), `the docs name a step that runs: ${name}`);
  t.deepEqual(
    named,
    order.filter((name) => named.includes(name)),
    'the docs list the steps in the order they run',
  );
  t.deepEqual(
    order.filter((name) => !named.includes(name)),
    TOLD_WITHIN,
    'every step has its item in the docs, but those told within another',
  );
  // The reads-and-writes map atop steps/index.ts, one row per step.
  const source = await readFile(join(ROOT, 'src/gateway/steps/index.ts'), 'utf8');
  const map = /^ \* {3}step {2,}reads {2,}writes\n([\s\S]*?)\n \*\n/m.exec(source)?.[1] ?? '';
  const rows = [...map.matchAll(/^ \* {3}([a-z-]+) /gm)].map((m) => m[1]!);
  t.deepEqual(rows, order, 'the map atop steps/index.ts has one row per step, in order');
  // No step's file numbers itself: its place is the table's.
  for (const file of await readdir(join(ROOT, 'src/gateway/steps'))) {
    const text = await readFile(join(ROOT, 'src/gateway/steps', file), 'utf8');
    t.notRegex(text, /^ \* \d+[a-z]?\. [A-Z]/m, `steps/${file} numbers no step by hand`);
  }
});

test('every check runs before the one step that sends; a refusal is seen with its step, then thrown', async (t) => {
  await inStore(async (_app, env) => {
    const ctx = contextOf(env, { ...hello });
    t.deepEqual(STEPS.slice(0, CHECKS.length), CHECKS, 'the checks come first');
    t.is(STEPS[CHECKS.length]!.name, 'upstream');
    for (const step of CHECKS) t.is(await step.run(ctx, env), undefined, `${step.name} lets a plain request on`);
    t.deepEqual(
      ctx.candidates.map((m) => m.id),
      ['small', 'large'],
    );
    const seen: string[] = [];
    const refuse: Step = {
      name: 'refuse',
      run: () => {
        throw new AppError('agent_stopped');
      },
    };
    const never: Step = { name: 'never', run: () => t.fail('a step after a refusal ran') };
    const err = await t.throwsAsync(
      runSteps(contextOf(env, hello), env, (_e, step) => void seen.push(step.name), [refuse, never]),
    );
    t.is((err as AppError).type, 'agent_stopped');
    t.deepEqual(seen, ['refuse']);
  });
});

test("racing budget admissions each see the others' reservations (the admission reserves in its own store write)", async (t) => {
  await loadTokenizer();
  await inStore(async (app, env) => {
    // "hello" with 10 tokens out on the small model is 11 micro-dollars: the budget holds one such request.
    await app.services.budgets.create(
      WID,
      { scope: { kind: 'workspace', id: WID }, amountMicros: 11, period: 'day', ladder: [{ at: 1, step: 'block' }] },
      'user:usr_x',
    );
    const racing = [0, 1].map(() => {
      const ctx = contextOf(env, { ...hello, max_tokens: 10 });
      ctx.candidates = [SMALL, LARGE];
      return ctx;
    });
    const ran = await Promise.allSettled(racing.map((ctx) => budget.run(ctx, env)));
    const admitted = ran.findIndex((r) => r.status === 'fulfilled');
    const refused = ran.find((r) => r.status === 'rejected');
    t.is(ran.filter((r) => r.status === 'fulfilled').length, 1, "the other admission saw the first one's reservation");
    t.is((refused!.reason as AppError).type, 'budget_exhausted');
    t.truthy(racing[admitted]!.reservation, 'the admitted request holds its reservation');
    t.like((await app.services.budgets.list(WID))[0], { reservedMicros: 11, spentMicros: 0 });
    await racing[admitted]!.reservation!.settle(7);
    t.like((await app.services.budgets.list(WID))[0], { reservedMicros: 0, spentMicros: 7 });
  });
});

test("a crashed process's reservation stops counting once it expires, and the next admission removes it", async (t) => {
  await inStore(async (app) => {
    const clock = manualClock(Date.parse('2026-11-24T10:00:00.000Z'));
    // Two processes on one store: the first admits and dies before settling.
    const [crashed, alive] = [0, 1].map(() =>
      createBudgets({
        store: app.store,
        clock,
        ids: randomIds,
        ledger: app.services.ledger,
        calls: app.services.calls,
        reservationMs: 60_000,
      }),
    );
    const made = await alive!.create(
      WID,
      { scope: { kind: 'workspace', id: WID }, amountMicros: 100, period: 'day', ladder: [{ at: 1, step: 'block' }] },
      'user:usr_x',
    );
    const held = await crashed!.admit(key, () => 100);
    t.truthy(held.reservation);
    t.like((await alive!.list(WID))[0], { reservedMicros: 100 });
    const refused = (await t.throwsAsync(alive!.admit(key, () => 10))) as AppError;
    t.is(refused.type, 'budget_exhausted', "the other process's reservation counts while it lives");
    clock.advance(60_001);
    t.like((await alive!.list(WID))[0], { reservedMicros: 0, spentMicros: 0 });
    const admitted = await alive!.admit(key, () => 10);
    t.truthy(admitted.reservation, 'admitted once the crashed reservation expired');
    const left = await app.store.tables.budgetReservations.scan([WID, made.id]);
    t.deepEqual(
      left.map((e) => e.value.micros),
      [10],
      'the expired reservation was removed; only the new one is stored',
    );
    await admitted.reservation!.settle(4);
    t.like((await alive!.list(WID))[0], { reservedMicros: 0, spentMicros: 4 });
    t.deepEqual(await app.store.tables.budgetReservations.scan([WID, made.id]), []);
  });
});

test('kill-switch: passes while nothing stands; "stop every agent" refuses a key bound to no agent', async (t) => {
  await inStore(async (app, env) => {
    await t.notThrowsAsync(killSwitch.run(contextOf(env, hello), env) as Promise<void>);
    await app.store.write(() =>
      app.store.tables.stopAll.put(WID, { reason: 'incident', by: 'user:usr_x', at: '2026-11-24T00:00:00.000Z' }),
    );
    const err = (await t.throwsAsync(killSwitch.run(contextOf(env, hello), env) as Promise<void>)) as AppError;
    t.is(err.type, 'agent_stopped');
    t.like(err.details, { hold: 'workspace', stopped: 'workspace', agentId: null });
  });
});

test('data-loss: redact rewrites the body and counts by kind; block refuses with counts only', async (t) => {
  await inStore(async (app, env) => {
    const body = { model: 'small', messages: [{ role: 'user', content: 'mail jane.doe@example.com' }] };
    const ctx = contextOf(env, body);
    await app.store.write(() =>
      app.store.tables.workspaceGateway.put(WID, { dataLoss: 'redact', updatedAt: 'now', updatedBy: 'user:usr_x' }),
    );
    ctx.own = await app.store.tables.workspaceGateway.get(WID);
    dataLoss.run(ctx, env);
    t.deepEqual(ctx.redacted, { email: 1 });
    t.is(body.messages[0]!.content, 'mail [REDACTED:email]');
    const blocking = contextOf(env, { ...hello, messages: [{ role: 'user', content: 'card 4111 1111 1111 1111' }] });
    blocking.own = { dataLoss: 'block', updatedAt: 'now', updatedBy: 'user:usr_x' };
    const err = t.throws(() => dataLoss.run(blocking, env)) as AppError;
    t.is(err.type, 'sensitive_data_blocked');
    t.deepEqual(err.details, { findings: { card: 1 } });
  });
});

test('admit: the answer says how it is served, and the request counts against the month', async (t) => {
  await inStore(async (_app, env) => {
    const ctx: GatewayContext = contextOf(env, hello);
    ctx.enforcement = 'shadow';
    ctx.wouldRouteTo = 'large';
    ctx.redacted = { email: 2, phone: 1 };
    const before = await env.calls.requestsThisMonth(WID, ctx.at);
    await admit.run(ctx, env);
    t.like(ctx.headers, {
      'x-svc-enforcement': 'shadow',
      'x-svc-would-route-to': 'large',
      'x-svc-redacted': 'email=2, phone=1',
    });
    t.is(await env.calls.requestsThisMonth(WID, ctx.at), before + 1);
  });
});

test("admit: the month's last request is taken once; a racing one is refused with 429 plan_limit_reached", async (t) => {
  await inStore(async (_app, env) => {
    const limited: GatewayEnv = { ...env, allowances: () => ({ people: null, monthlyRequests: 1 }) };
    const racing = [contextOf(limited, hello), contextOf(limited, hello)];
    const ran = await Promise.allSettled(racing.map((ctx) => admit.run(ctx, limited)));
    t.is(ran.filter((r) => r.status === 'fulfilled').length, 1, 'one takes the last request');
    const err = ran.find((r) => r.status === 'rejected')!.reason as AppError;
    t.is(err.type, 'plan_limit_reached');
    t.truthy(err.headers['retry-after']);
    t.is(await env.calls.requestsThisMonth(WID, racing[0]!.at), 1, 'the refused request is not counted');
  });
});

test('dry-run: answers with the first candidate and the estimate only when asked, and records the call', async (t) => {
  // The estimate counts tokens with the tokenizer (the gateway waits for it to load; a step alone must too).
  await loadTokenizer();
  await inStore(async (_app, env) => {
    const plain = contextOf(env, hello);
    plain.candidates = [SMALL, LARGE];
    t.is(await dryRun.run(plain, env), undefined, 'not asked: the path goes on');
    const ctx = contextOf(env, { ...hello, max_tokens: 10 });
    ctx.steering = { ...ctx.steering, dryRun: true };
    ctx.candidates = [SMALL, LARGE];
    ctx.taskClass = 'general';
    ctx.headers['x-svc-enforcement'] = 'observe';
    const answer = (await dryRun.run(ctx, env)) as { status: number; json: Record<string, unknown> };
    t.is(answer.status, 200);
    // "hello": 1 token in (the tokenizer's count), 10 out, at 1,000,000 per million: 11 micro-dollars.
    t.like(answer.json, {
      object: 'svc.dry_run',
      model: 'small',
      candidates: ['small', 'large'],
      estimatedCostMicros: 11,
    });
    t.is(ctx.headers['x-svc-routed-to'], 'small');
    await env.calls.flush();
    t.like(
      (await env.calls.page(WID, { limit: 10 })).find((c) => c.id === ctx.callId),
      { outcome: 'dry_run', model: 'small' },
    );
  });
});

test('account: no model answered is 502 upstream_failure naming the models tried, and the call is recorded', async (t) => {
  await inStore(async (_app, env) => {
    const ctx = contextOf(env, hello);
    ctx.attempted.push('small', 'large');
    ctx.outcome = { kind: 'exhausted' };
    ctx.headers['x-svc-enforcement'] = 'observe';
    const err = (await t.throwsAsync(account.run(ctx, env) as Promise<void>)) as AppError;
    t.is(err.type, 'upstream_failure');
    t.deepEqual(err.details, { attemptedModels: ['small', 'large'] });
    await env.calls.flush();
    t.like(
      (await env.calls.page(WID, { limit: 10 })).find((c) => c.id === ctx.callId),
      {
        outcome: 'upstream_failure',
        attemptedModels: ['small', 'large'],
      },
    );
  });
});
