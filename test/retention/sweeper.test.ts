import test from 'ava';
import { pino } from 'pino';
import { createLogger } from '../../src/lib/log.js';
import { createSweeper, type SweepReport } from '../../src/retention/index.js';
import { sweepJob } from '../../src/retention/sweeper.js';
import { migrateStore, openStore, type Store, type Tables } from '../../src/store/index.js';
import { removeDir, tempDir } from '../helpers/process.js';
import { fixedClock } from '../helpers/store.js';

/**
 * The sweeper's own guarantees, on a real LMDB file and a fixed clock: bounded runs (entries read
 * per run, removals per write), a cursor that moves on across runs, a record refreshed between
 * the read and the write left alone, two instances sweeping at once, and one failing job not
 * stopping the others.
 */
const NOW = Date.parse('2026-11-01T00:00:00.000Z');
const OLD = new Date(NOW - 1000).toISOString();
const NEW = new Date(NOW + 1000).toISOString();
const silent = createLogger('silent');

// One store per test, in its own dir; the tests of this file run one at a time.
let dir: string;
let store: Store;

test.beforeEach(async () => {
  dir = await tempDir();
  store = await openStore(dir);
  await migrateStore(store);
});

test.afterEach.always(async () => {
  await store?.close();
  await removeDir(dir);
});

/** `tasks` entries are `[wid, id] -> time`: past its time is expired here. */
const tasksJob = sweepJob({ table: 'tasks', expired: (e, now) => Date.parse(e.value) <= now });

async function put(entries: Array<[string, string]>, value: (id: string) => string): Promise<void> {
  await store.write(async () => {
    for (const [wid, id] of entries) await store.tables.tasks.put([wid, id], value(id));
  });
}

const ids = (prefix: string, n: number): Array<[string, string]> =>
  Array.from({ length: n }, (_v, i) => ['ws_a', `${prefix}${String(i).padStart(5, '0')}`]);

/** A store whose writes are counted, with the removals each made. */
function counting(inner: Store) {
  const writes: number[] = [];
  const wrapped: Store = {
    ...inner,
    tables: inner.tables,
    write: async <T>(fn: (tx: Tables) => Promise<T>) => {
      const before = (await inner.tables.tasks.scan([])).length;
      const result = await inner.write(fn);
      writes.push(before - (await inner.tables.tasks.scan([])).length);
      return result;
    },
  };
  return { store: wrapped, writes };
}

test.serial(
  'a run reads at most maxPerRun entries of a table and removes them in writes of at most batch',
  async (t) => {
    await put(ids('old', 250), () => OLD);
    const { store: counted, writes } = counting(store);
    const sweeper = createSweeper({
      store: counted,
      clock: fixedClock(NOW),
      log: silent,
      jobs: [tasksJob],
      everyMs: 60_000,
      batch: 40,
      maxPerRun: 100,
    });
    const first: SweepReport = await sweeper.run();
    t.deepEqual(first.tables.tasks, { examined: 100, removed: 100 });
    t.deepEqual(writes, [40, 40, 20], 'three writes, none over the batch');
    t.is((await store.tables.tasks.scan([])).length, 150);
    t.is((await sweeper.run()).removed, 100);
    t.is((await sweeper.run()).removed, 50);
    t.deepEqual(await store.tables.tasks.scan([]), []);
    t.is((await sweeper.run()).removed, 0);
  },
);

test.serial('a table larger than one run is walked on from where the last run stopped', async (t) => {
  // 300 live entries sort first: a sweeper that started at the beginning every run would never reach the old ones.
  await put(ids('a-live', 300), () => NEW);
  await put(ids('b-old', 50), () => OLD);
  const sweeper = createSweeper({
    store,
    clock: fixedClock(NOW),
    log: silent,
    jobs: [tasksJob],
    everyMs: 60_000,
    batch: 64,
    maxPerRun: 150,
  });
  const runs = [await sweeper.run(), await sweeper.run(), await sweeper.run()].map((r) => r.tables.tasks);
  t.deepEqual(runs, [
    { examined: 150, removed: 0 },
    { examined: 150, removed: 0 },
    { examined: 50, removed: 50 },
  ]);
  t.is((await store.tables.tasks.scan([])).length, 300, 'every live entry stays');
  // At the end of the table the walk starts over.
  t.deepEqual((await sweeper.run()).tables.tasks, { examined: 150, removed: 0 });
});

test.serial('an entry refreshed between the read and the write is judged by what it holds then', async (t) => {
  await put(ids('old', 3), () => OLD);
  let refreshed = false;
  const racing: Store = {
    ...store,
    tables: store.tables,
    write: async <T>(fn: (tx: Tables) => Promise<T>) => {
      if (!refreshed) {
        refreshed = true;
        // Another request renews one entry after the sweeper read it and before it writes.
        await store.write(() => store.tables.tasks.put(['ws_a', 'old00001'], NEW));
      }
      return store.write(fn);
    },
  };
  const sweeper = createSweeper({
    store: racing,
    clock: fixedClock(NOW),
    log: silent,
    jobs: [tasksJob],
    everyMs: 60_000,
    batch: 10,
    maxPerRun: 10,
  });
  t.is((await sweeper.run()).removed, 2);
  t.deepEqual(
    (await store.tables.tasks.scan([])).map((e) => [e.key[1], e.value]),
    [['old00001', NEW]],
  );
});

test.serial('two instances sweeping the same store at once remove each entry once and keep the rest', async (t) => {
  await put(ids('x', 400), (id) => (Number(id.slice(1)) % 4 === 0 ? NEW : OLD));
  const make = () =>
    createSweeper({
      store,
      clock: fixedClock(NOW),
      log: silent,
      jobs: [tasksJob],
      everyMs: 60_000,
      batch: 25,
      maxPerRun: 1000,
    });
  const [a, b] = await Promise.all([make().run(), make().run()]);
  t.is(a.removed + b.removed, 300, 'together they removed each expired entry once');
  t.true(a.tables.tasks!.examined >= 100 && b.tables.tasks!.examined >= 100, 'each walked the whole table');
  const left = await store.tables.tasks.scan([]);
  t.is(left.length, 100);
  t.true(left.every((e) => e.value === NEW));
});

test.serial('a job that fails is logged and the next job still runs', async (t) => {
  await put(ids('old', 2), () => OLD);
  await store.write(() => store.tables.hookOnce.put(['slack', 'sig'], NOW - 1));
  const lines: string[] = [];
  const log = pino({ level: 'error' }, { write: (line: string) => lines.push(line) });
  const sweeper = createSweeper({
    store,
    clock: fixedClock(NOW),
    log,
    jobs: [
      sweepJob({
        table: 'tasks',
        expired: () => true,
        alongside: async () => {
          throw new Error('index row unreadable');
        },
      }),
      sweepJob({ table: 'hookOnce', expired: (e, now) => e.value <= now }),
    ],
    everyMs: 60_000,
    batch: 10,
    maxPerRun: 10,
  });
  const report = await sweeper.run();
  t.deepEqual(report.tables.hookOnce, { examined: 1, removed: 1 });
  t.is(report.tables.tasks, undefined);
  t.is((await store.tables.tasks.scan([])).length, 2, 'the failed write removed nothing');
  t.true(lines.some((l) => l.includes('"table":"tasks"') && l.includes('sweep failed')));
});
