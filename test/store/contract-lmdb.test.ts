import test from 'ava';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { openStore } from '../../src/store/open.js';
import { removeDir, ROOT, tempDir } from '../helpers/process.js';
import fc from 'fast-check';
import type { KeyPart } from '../../src/store/types.js';
import {
  contractSuite,
  keysAndQueries,
  modelScan,
  options,
  putFromAnotherProcess,
  reopenFromAnotherProcess,
} from './contract-suite.js';
import type { StoreError } from '../../src/store/errors.js';

/** The store contract (contract-suite.ts) on the LMDB backend, and a store an older svc made. */

const dirs: string[] = [];
test.after.always(async () => {
  for (const dir of dirs) await removeDir(dir);
});

contractSuite(test, {
  name: 'lmdb',
  async open() {
    const dataDir = await tempDir('svc-kv-');
    dirs.push(dataDir);
    return { store: await openStore(dataDir), spec: { dataDir }, reopen: () => openStore(dataDir) };
  },
});

test('lmdb: a store made by an older version (fixture store-v1) opens with its schema version', async (t) => {
  const dataDir = await tempDir('svc-kv-');
  dirs.push(dataDir);
  await cp(join(ROOT, 'test/fixtures/store-v1/svc.mdb'), join(dataDir, 'svc.mdb'));
  const kv = await openStore(dataDir);
  t.is(await kv.schemaVersion(), 1);
  t.true((await kv.tables.workspaces.scan([])).length > 0);
  await kv.close();
});

test('lmdb: concurrent writes of one process run once each, as if one after another in call order', async (t) => {
  // Writes of one process queue: each reads through the writes of those before it whose commit is
  // still pending (get and scan, with limits), so none conflicts and none runs twice.
  const dataDir = await tempDir('svc-kv-');
  dirs.push(dataDir);
  const store = await openStore(dataDir);
  let round = 0;
  // A small key space, so that the writes' keys, removes and scan ranges overlap often.
  const small = fc.constantFrom<KeyPart>('a', 'b', 1, 2);
  const { key3, query } = keysAndQueries(small, 4);
  await fc.assert(
    fc.asyncProperty(
      fc.uniqueArray(key3, { maxLength: 16, selector: (k) => JSON.stringify(k) }),
      fc.array(
        fc.record({
          before: fc.array(fc.tuple(key3, fc.boolean()), { maxLength: 3 }),
          q: query,
          get: key3,
          ops: fc.array(fc.tuple(key3, fc.boolean()), { maxLength: 4 }),
        }),
        {
          minLength: 2,
          maxLength: 8,
        },
      ),
      async (stored, writes) => {
        const space = `c${round++}`;
        const model = new Map<string, { key: KeyPart[]; value: number }>();
        await store.write(async (tx) => {
          for (const [i, k] of stored.entries()) await tx.periodUsage.put([space, ...k], i);
        });
        for (const [i, k] of stored.entries()) model.set(JSON.stringify(k), { key: [space, ...k], value: i });
        const runs = writes.map(() => 0);
        const got = await Promise.all(
          writes.map(({ before, q, get, ops }, w) =>
            store.write(async (tx) => {
              runs[w]!++;
              for (const [j, [k, remove]] of before.entries()) {
                if (remove) await tx.periodUsage.remove([space, ...k]);
                else await tx.periodUsage.put([space, ...k], 100 * (w + 1) + j);
              }
              const scanned = await tx.periodUsage.scan([space, ...q.prefix], options(q));
              const one = (await tx.periodUsage.get([space, ...get])) ?? null;
              for (const [j, [k, remove]] of ops.entries()) {
                if (remove) await tx.periodUsage.remove([space, ...k]);
                else await tx.periodUsage.put([space, ...k], 10000 * (w + 1) + j);
              }
              return { scanned, one };
            }),
          ),
        );
        const want = writes.map(({ before, q, get, ops }, w) => {
          for (const [j, [k, remove]] of before.entries()) {
            if (remove) model.delete(JSON.stringify(k));
            else model.set(JSON.stringify(k), { key: [space, ...k], value: 100 * (w + 1) + j });
          }
          const scanned = modelScan(model, { ...options(q), prefix: [space, ...q.prefix] });
          const one = model.get(JSON.stringify(get))?.value ?? null;
          for (const [j, [k, remove]] of ops.entries()) {
            if (remove) model.delete(JSON.stringify(k));
            else model.set(JSON.stringify(k), { key: [space, ...k], value: 10000 * (w + 1) + j });
          }
          return { scanned, one };
        });
        const final = await store.tables.periodUsage.scan([space]);
        const ok =
          JSON.stringify(got) === JSON.stringify(want) &&
          runs.every((n) => n === 1) &&
          JSON.stringify(final) === JSON.stringify(modelScan(model, { prefix: [space] }));
        if (!ok) t.log({ stored, writes, got, want, runs });
        return ok;
      },
    ),
    { numRuns: 300 },
  );
  await store.close();
  t.pass();
});

test('lmdb: a write that another process keeps changing under it gives up with StoreError conflict, nothing applied', async (t) => {
  const dataDir = await tempDir('svc-kv-');
  dirs.push(dataDir);
  const store = await openStore(dataDir, { maxAttempts: 2 });
  await store.write(async (tx) => tx.periodUsage.put('hot', 0));
  let runs = 0;
  const err = await t.throwsAsync(
    store.write(async (tx) => {
      runs++;
      const n = (await tx.periodUsage.get('hot')) ?? 0;
      // Each run, another process (as the CLI would) commits a change to what this one read.
      const other = await putFromAnotherProcess(dataDir, 'hot', 100 + runs);
      t.is(other.code, 0, other.stderr);
      await tx.periodUsage.put('hot', n + 1);
      await tx.periodUsage.put('mine', 1);
    }),
  );
  t.is(err?.name, 'StoreError');
  t.is((err as StoreError).code, 'conflict');
  t.is(runs, 2);
  t.is(await store.tables.periodUsage.get('hot'), 102, "only the other process's writes landed");
  t.is(await store.tables.periodUsage.get('mine'), undefined);
  await store.close();
});

test('lmdb: a write that throws on what another process changed under it runs again, and its throw stands only on reads that still hold', async (t) => {
  const dataDir = await tempDir('svc-kv-');
  dirs.push(dataDir);
  const store = await openStore(dataDir);
  await store.write(async (tx) => {
    await tx.periodUsage.put('count', 1);
    await tx.periodUsage.put('stored', 1);
  });
  // The first run reads `count`, then another process moves `count` and `stored` together: what
  // this run reads next disagrees with its first read, and it throws on that.
  let runs = 0;
  const seen = await store.write(async (tx) => {
    runs++;
    const count = (await tx.periodUsage.get('count')) as number;
    if (runs === 1) {
      for (const key of ['count', 'stored']) {
        const other = await putFromAnotherProcess(dataDir, key, 2);
        t.is(other.code, 0, other.stderr);
      }
    }
    const stored = (await tx.periodUsage.get('stored')) as number;
    if (stored !== count) throw new Error(`the count says ${count} but ${stored} are stored`);
    return count;
  });
  t.is(runs, 2, 'the run that read across the other commit ran again');
  t.is(seen, 2);
  // A throw on reads that hold is the answer, once.
  runs = 0;
  const err = await t.throwsAsync(
    store.write(async (tx) => {
      runs++;
      await tx.periodUsage.get('count');
      throw new Error('refused');
    }),
  );
  t.is(err?.message, 'refused');
  t.is(runs, 1);
  await store.close();
});

test('lmdb: another process opening the store again and again while this one commits loses no acknowledged write', async (t) => {
  const dataDir = await tempDir('svc-kv-');
  dirs.push(dataDir);
  const store = await openStore(dataDir);
  await store.write(async (tx) => tx.periodUsage.put('counter', 0));
  // Increments, four at a time, for as long as the other process opens the store (a replacement
  // worker's start, a CLI command): each one acknowledged must be counted at the end.
  let acknowledged = 0;
  let opening = true;
  let started!: () => void;
  const open = new Promise<void>((resolve) => (started = resolve));
  const other = reopenFromAnotherProcess(dataDir, 4000, started).finally(() => (opening = false));
  await open;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (opening) {
        await store.write(async (tx) => {
          const n = ((await tx.periodUsage.get('counter')) as number | undefined) ?? 0;
          await tx.periodUsage.put('counter', n + 1);
        });
        acknowledged++;
      }
    }),
  );
  const { code, lines, stderr } = await other;
  t.is(code, 0, stderr);
  t.log(`${acknowledged} increments acknowledged while the other process opened the store ${lines.at(-1)} times`);
  // Read in a write: the latest commit, whatever the last opener left in the lock file.
  t.is(await store.write(async (tx) => tx.periodUsage.get('counter')), acknowledged);
  await store.close();
});
