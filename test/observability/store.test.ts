import test from 'ava';
import { metrics } from '../../src/lib/metrics.js';
import { instrumentStore } from '../../src/observability/store.js';
import { migrateStore, openStore, type Store } from '../../src/store/index.js';
import { removeDir, tempDir } from '../helpers/process.js';

/**
 * The measured store (observability/store.ts) over a real LMDB file: each write is one sample of
 * svc_store_write_duration_seconds, a write started inside another joins it (one transaction, one
 * sample), reads inside a write see its own puts, and everything else is the store's own.
 */
let dir: string;
let raw: Store;

test.beforeEach(async () => {
  dir = await tempDir();
  raw = await openStore(dir);
  await migrateStore(raw);
});

test.afterEach.always(async () => {
  await raw?.close();
  await removeDir(dir);
});

/** Samples of the write latency series so far, by outcome. */
async function samples(outcome: 'ok' | 'error'): Promise<number> {
  const { values } = await metrics.storeFlush.get();
  const count = values.find(
    (v) => v.metricName === 'svc_store_write_duration_seconds_count' && v.labels.outcome === outcome,
  );
  return count?.value ?? 0;
}

test.serial('a write inside a write joins it: one transaction, measured once', async (t) => {
  const store = instrumentStore(raw);
  const before = await samples('ok');
  const seen = await store.write(async () => {
    await store.tables.tasks.put(['ws_a', 'one'], '2026-11-01T00:00:00.000Z');
    t.true(store.inWrite());
    await store.write(async () => {
      await store.tables.tasks.put(['ws_a', 'two'], '2026-11-02T00:00:00.000Z');
    });
    return (await store.tables.tasks.scan(['ws_a'])).map((e) => e.key[1]);
  });
  t.deepEqual(seen, ['one', 'two'], 'the write reads its own puts, the joined one included');
  t.is((await samples('ok')) - before, 1);
  t.false(store.inWrite());
  t.is(await store.tables.tasks.get(['ws_a', 'two']), '2026-11-02T00:00:00.000Z');
});

test.serial('a failed write is measured as an error and leaves nothing behind', async (t) => {
  const store = instrumentStore(raw);
  const before = await samples('error');
  await t.throwsAsync(
    store.write(async () => {
      await store.tables.tasks.put(['ws_a', 'lost'], '2026-11-01T00:00:00.000Z');
      throw new Error('refused midway');
    }),
    { message: 'refused midway' },
  );
  t.is((await samples('error')) - before, 1);
  t.is(await store.tables.tasks.get(['ws_a', 'lost']), undefined);
});

test.serial("the backend, schema version and writability are the store's own", async (t) => {
  const store = instrumentStore(raw);
  t.is(store.backend, 'lmdb');
  t.is(await store.schemaVersion(), await raw.schemaVersion());
  t.true((await store.schemaVersion()) > 0);
  t.true(store.writable());
});
