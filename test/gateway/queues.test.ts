import test from 'ava';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import v8 from 'node:v8';
import vm from 'node:vm';
import { pino } from 'pino';
import type { App } from '../../src/app.js';
import type { AppError } from '../../src/errors/app-error.js';
import { createCallLog } from '../../src/gateway/calls.js';
import { createRefusalLog } from '../../src/gateway/refusals.js';
import type { LedgerEvent } from '../../src/ledger/service.js';
import { randomIds } from '../../src/lib/ids.js';
import type { Store } from '../../src/store/index.js';
import type { CallRecord } from '../../src/gateway/records.js';
import { removeDir, tempDir } from '../helpers/process.js';
import { withStore } from '../helpers/store.js';

/**
 * The gateway's write-behind queues (issue 15 item 6) over a real LMDB store whose writes the test
 * stalls or fails: call records and refusal evidence never wait for the store, memory stays
 * bounded when the store does not keep up, and what is dropped is counted and logged (at most a
 * line per 10 s); a refusal's evidence id names a record that is durable after the flush.
 */
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

const WA = 'wsp_aaaaaaaaaaaaaaaaaaaaaa';
const WB = 'wsp_bbbbbbbbbbbbbbbbbbbbbb';

/** A logger whose lines the test reads. */
function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level: 'warn' }, stream), lines };
}

/** A store write that waits until released (a slow or stuck disk), then writes for real. */
function stalled(store: Store) {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const write: Store['write'] = (fn) => gate.then(() => store.write(fn));
  return { write, release };
}

const clockAt = (start: number) => {
  const c = { ms: start, now: () => c.ms };
  return c;
};

async function inStore(fn: (app: App) => Promise<void>): Promise<void> {
  const dir = await tempDir();
  try {
    await withStore(dir, async (app) => {
      // The ledger signs a checkpoint every 1,000 records: its key must exist.
      await app.services.signingKeys.ensure();
      await fn(app);
    });
  } finally {
    await removeDir(dir);
  }
}

/** 2,000 characters of its own (a template literal over one padding would share it): 50,000 of them are some 100 MB. */
const bulky = () => randomBytes(1000).toString('hex');

const callRecord = (wid: string, i: number, model = 'small'): CallRecord => ({
  id: `call_${String(i).padStart(22, '0')}`,
  workspaceId: wid,
  at: '2026-11-24T00:00:00.000Z',
  keyId: 'key_0000000000000000000000',
  principal: null,
  team: null,
  agentId: null,
  taskId: 'task_0000000000000000000000',
  taskClass: 'general',
  sessionId: 'ses_0',
  shape: 'openai',
  stream: false,
  dryRun: false,
  enforcement: 'observe',
  requestedModel: model,
  model: 'small',
  provider: 'vendor-o',
  attemptedModels: ['small'],
  inputTokens: 1,
  outputTokens: 2,
  costMicros: 1,
  latencyMs: 1,
  overheadMicros: 1,
  outcome: 'ok',
  budgetId: null,
});

const refusal = (wid: string, i: number, note = ''): LedgerEvent => ({
  workspaceId: wid,
  actor: 'key:key_0000000000000000000000',
  kind: 'gateway.call_refused',
  subject: `call_${String(i).padStart(22, '0')}`,
  data: { type: 'agent_stopped', note },
});

const heapMb = () => {
  gc();
  return process.memoryUsage().heapUsed / 1_048_576;
};

test('a stalled store: the call queue holds at most its capacity, and what is past it is dropped, counted per workspace and logged once per 10 s', async (t) => {
  await inStore(async (app) => {
    const { log, lines } = capture();
    const clock = clockAt(Date.parse('2026-11-24T00:00:00Z'));
    const disk = stalled(app.store);
    const calls = createCallLog({ store: app.store, log, clock, write: disk.write, capacity: 1000, batch: 100 });
    const before = heapMb();
    for (let i = 0; i < 50_000; i += 1) calls.record(callRecord(i % 2 === 0 ? WA : WB, i, bulky()));
    const grown = heapMb() - before;
    t.true(grown < 30, `the heap grew ${grown.toFixed(1)} MB for 50,000 records of 2 KB`);
    t.like(calls.stats(), { capacity: 1000, queued: 1000, dropped: 49_000 });
    t.deepEqual(calls.queueOf(WA), { capacity: 1000, dropped: 24_500, tasksDropped: 0 });
    t.is(calls.queueOf(WB).dropped, 24_500);
    const warned = lines.filter((l) => l.level === 40);
    t.is(warned.length, 1, 'one line for 49,000 drops within 10 s');
    t.like(warned[0], { dropped: 1, droppedTotal: 1, capacity: 1000 });
    t.regex(String(warned[0]!.msg), /call records: the queue is full/);
    clock.ms += 10_000;
    calls.record(callRecord(WA, 50_000));
    t.like(lines.filter((l) => l.level === 40)[1], { dropped: 49_000, droppedTotal: 49_001 });
    // The disk catches up: what was kept is written, and the queue takes records again.
    disk.release();
    await calls.flush();
    t.is((await app.store.tables.calls.scan([WA])).length + (await app.store.tables.calls.scan([WB])).length, 1000);
    t.is(calls.stats().queued, 0);
    calls.record(callRecord(WA, 60_000));
    await calls.flush();
    t.is((await app.store.tables.calls.scan([WA])).length, 501);
  });
});

test('new task ids are bounded too, and the request counters are never dropped', async (t) => {
  await inStore(async (app) => {
    const { log } = capture();
    const disk = stalled(app.store);
    const calls = createCallLog({ store: app.store, log, clock: clockAt(0), write: disk.write, capacity: 10 });
    const at = '2026-11-24T00:00:00.000Z';
    for (let i = 0; i < 25; i += 1) {
      await calls.countRequest(WA, at);
      calls.openTask(WA, `task_${String(i).padStart(22, '0')}`, at);
    }
    t.like(calls.stats(), { tasks: 10, tasksDropped: 15 });
    t.is(calls.queueOf(WA).tasksDropped, 15);
    t.is(await calls.requestsThisMonth(WA, at), 25, 'every request counts against the month');
    t.true(await calls.taskKnown(WA, `task_${String(9).padStart(22, '0')}`));
    t.false(await calls.taskKnown(WA, `task_${String(10).padStart(22, '0')}`), 'a dropped task id is unknown');
    disk.release();
    await calls.flush();
    t.is(await app.store.tables.monthlyRequests.get([WA, '2026-11']), 25);
    t.is((await app.store.tables.tasks.scan([WA])).length, 10);
  });
});

test('a failing store: call records are kept, retried, and written once it recovers', async (t) => {
  await inStore(async (app) => {
    const { log, lines } = capture();
    let failing = true;
    const write: Store['write'] = (fn) =>
      failing ? Promise.reject(new Error('ENOSPC: no space left on device')) : app.store.write(fn);
    const calls = createCallLog({ store: app.store, log, clock: clockAt(0), write });
    for (let i = 0; i < 10; i += 1) calls.record(callRecord(WA, i));
    await calls.flush();
    t.is(calls.stats().queued, 10, 'kept for the next try');
    t.true(lines.some((l) => l.level === 50 && /call records could not be written/.test(String(l.msg))));
    failing = false;
    await calls.flush();
    t.is((await app.store.tables.calls.scan([WA])).length, 10);
    t.is(calls.stats().queued, 0);
  });
});

test("a refusal's evidence id is handed out before any write, and names the durable record after the flush", async (t) => {
  await inStore(async (app) => {
    const { log } = capture();
    const disk = stalled(app.store);
    const refusals = createRefusalLog({
      store: app.store,
      ledger: app.services.ledger,
      ids: randomIds,
      clock: app.clock,
      log,
      write: disk.write,
    });
    const id = refusals.record(refusal(WA, 1));
    t.is(typeof id, 'string', 'answered at once, while the store is stalled');
    t.regex(id as string, /^evr_[0-9A-Za-z]{22}$/);
    t.is((await app.services.ledger.list(WA, { limit: 10 })).data.length, 0, 'not durable yet');
    disk.release();
    await refusals.flush();
    const [record] = (await app.services.ledger.list(WA, { limit: 10 })).data;
    t.like(record, {
      id: id as string,
      kind: 'gateway.call_refused',
      actor: 'key:key_0000000000000000000000',
      subject: `call_${String(1).padStart(22, '0')}`,
      data: { type: 'agent_stopped' },
    });
    t.true((await app.services.ledger.verify(WA)).ok);
  });
});

test('a full refusal queue: the refused caller waits for room, and its record is written once the store catches up', async (t) => {
  await inStore(async (app) => {
    const { log } = capture();
    const disk = stalled(app.store);
    const refusals = createRefusalLog({
      store: app.store,
      ledger: app.services.ledger,
      ids: randomIds,
      clock: app.clock,
      log,
      write: disk.write,
      capacity: 5,
      waitMs: 60_000,
    });
    const ids = [1, 2, 3, 4, 5].map((i) => refusals.record(refusal(WA, i)));
    t.true(ids.every((id) => typeof id === 'string'));
    const waiting = refusals.record(refusal(WA, 6));
    t.true(waiting instanceof Promise, 'no room: the sixth waits');
    t.like(refusals.stats(), { queued: 5, waiting: 1 });
    disk.release();
    // One flush writes the five, then the sixth, queued as the first write made room.
    await refusals.flush();
    const sixth = await waiting;
    t.regex(sixth!, /^evr_/);
    t.deepEqual(
      (await app.services.ledger.list(WA, { limit: 10 })).data.map((r) => r.id),
      [...(ids as string[]), sixth],
    );
    t.like(refusals.stats(), { queued: 0, waiting: 0, dropped: 0 });
  });
});

test('a full refusal queue with no room in time: refused without an id, the drop counted and logged', async (t) => {
  await inStore(async (app) => {
    const { log, lines } = capture();
    const disk = stalled(app.store);
    const deps = { store: app.store, ledger: app.services.ledger, ids: randomIds, clock: app.clock, log };
    const now = createRefusalLog({ ...deps, write: disk.write, capacity: 3, waitMs: 0 });
    for (let i = 0; i < 3; i += 1) t.is(typeof now.record(refusal(WA, i)), 'string');
    t.is(now.record(refusal(WB, 4)), null, 'no wait allowed: dropped at once');
    t.deepEqual(now.queueOf(WB), { capacity: 3, dropped: 1 });
    t.is(now.queueOf(WA).dropped, 0);
    t.true(lines.some((l) => l.level === 40 && /gateway refusal records: the queue is full/.test(String(l.msg))));
    const soon = createRefusalLog({ ...deps, write: disk.write, capacity: 1, waitMs: 1 });
    t.is(typeof soon.record(refusal(WA, 5)), 'string');
    t.is(await soon.record(refusal(WA, 6)), null, 'no room within waitMs');
    t.like(soon.stats(), { waiting: 0, dropped: 1 });
    disk.release();
    await now.flush();
    await soon.flush();
  });
});

test('a stalled store and 50,000 refusals: memory stays bounded, and the drops are counted', async (t) => {
  await inStore(async (app) => {
    const { log } = capture();
    const disk = stalled(app.store);
    const refusals = createRefusalLog({
      store: app.store,
      ledger: app.services.ledger,
      ids: randomIds,
      clock: app.clock,
      log,
      write: disk.write,
      capacity: 1000,
      waitMs: 0,
    });
    const before = heapMb();
    let dropped = 0;
    for (let i = 0; i < 50_000; i += 1) if (refusals.record(refusal(WA, i, bulky())) === null) dropped += 1;
    const grown = heapMb() - before;
    t.true(grown < 30, `the heap grew ${grown.toFixed(1)} MB`);
    t.is(dropped, 49_000);
    t.like(refusals.stats(), { queued: 1000, dropped: 49_000 });
    disk.release();
    await refusals.flush();
    // The records are durable; integrated (given their index) by the ledger's integrator.
    await app.services.ledger.integrateNow(WA);
    t.is((await app.services.ledger.head(WA))!.size, 1000);
  });
});

test('a refusal record that cannot be hashed is not queued, and never blocks the others', async (t) => {
  await inStore(async (app) => {
    const { log, lines } = capture();
    const refusals = createRefusalLog({
      store: app.store,
      ledger: app.services.ledger,
      ids: randomIds,
      clock: app.clock,
      log,
    });
    t.is(refusals.record({ ...refusal(WA, 1), data: { type: 'agent_stopped', model: 'bad \ud800' } }), null);
    t.true(lines.some((l) => l.level === 50));
    const good = refusals.record(refusal(WA, 2));
    await refusals.flush();
    t.deepEqual(
      (await app.services.ledger.list(WA, { limit: 10 })).data.map((r) => r.id),
      [good],
    );
  });
});

test("the gateway's close writes the refusal records still queued, and signs a checkpoint over them", async (t) => {
  const dir = await tempDir();
  try {
    const wid = 'wsp_dddddddddddddddddddddd';
    const evidence = await withStore(dir, async (app) => {
      await app.services.signingKeys.ensure();
      await app.store.write(() =>
        app.store.tables.stopAll.put(wid, { reason: 'incident', by: 'user:usr_x', at: '2026-11-24T00:00:00.000Z' }),
      );
      const err = await t.throwsAsync(
        app.services.gateway.handle({
          shape: 'openai',
          body: { model: 'small', messages: [{ role: 'user', content: 'hi' }] },
          key: {
            id: 'key_dddddddddddddddddddddd',
            workspaceId: wid,
            scope: 'inference',
            name: null,
            principal: null,
            team: null,
            defaultTaskClass: 'general',
            policyProfile: null,
            agentId: null,
            hash: 'x',
            createdAt: '2026-11-24T00:00:00.000Z',
            createdBy: 'user:usr_x',
            revokedAt: null,
          },
          headers: {},
          traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
          signal: new AbortController().signal,
          startedAt: performance.now(),
        }),
      );
      t.is((err as AppError).type, 'agent_stopped');
      const id = (err as AppError).details.evidenceRecord;
      t.regex(String(id), /^evr_/);
      return id;
      // withStore closes the app here, as `svc serve` does on SIGTERM.
    });
    await withStore(dir, async (app) => {
      const { data } = await app.services.ledger.list(wid, { limit: 10 });
      t.deepEqual(
        data.map((r) => [r.id, r.kind, r.actor]),
        [[evidence, 'gateway.call_refused', 'key:key_dddddddddddddddddddddd']],
      );
      const head = (await app.services.ledger.head(wid))!;
      t.is(head.checkpointSize, head.size, 'covered by a signed checkpoint');
    });
  } finally {
    await removeDir(dir);
  }
});
