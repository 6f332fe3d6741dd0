import test from 'ava';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { openKvLmdbStore } from '../../src/store/kv-lmdb.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { removeDir, ROOT, tempDir } from '../helpers/process.js';
import { contractSuite } from './contract-suite.js';

/** The store contract (contract-suite.ts) on the LMDB backend, and its compatibility with today's. */

const dirs: string[] = [];
test.after.always(async () => {
  for (const dir of dirs) await removeDir(dir);
});

contractSuite(test, {
  name: 'lmdb',
  async open() {
    const dataDir = await tempDir('svc-kv-');
    dirs.push(dataDir);
    return { store: openKvLmdbStore(dataDir), spec: { dataDir }, reopen: async () => openKvLmdbStore(dataDir) };
  },
});

test('lmdb: the async and the synchronous backend read and write one file alike', async (t) => {
  const dataDir = await tempDir('svc-kv-');
  dirs.push(dataDir);
  const sync = openLmdbStore(dataDir);
  const kv = openKvLmdbStore(dataDir);
  await sync.write(() => sync.tables.agents.put(['wid_1', 'agt_1'], { id: 'agt_1', name: 'a' } as never));
  t.deepEqual(await kv.tables.agents.get(['wid_1', 'agt_1']), { id: 'agt_1', name: 'a' });
  await kv.write(async (tx) => tx.periodUsage.put(['wid_1', 'agt_1', 'k', 'USD', '2026-11-24'], 125));
  t.is(sync.tables.periodUsage.get(['wid_1', 'agt_1', 'k', 'USD', '2026-11-24']), 125);
  t.deepEqual(
    (await kv.tables.agents.scan(['wid_1'])).map((e) => e.key),
    sync.tables.agents.scan(['wid_1']).map((e) => e.key),
  );
  await kv.close();
  await sync.close();
});

test('lmdb: a store made by an older version (fixture store-v1) opens with its schema version', async (t) => {
  const dataDir = await tempDir('svc-kv-');
  dirs.push(dataDir);
  await cp(join(ROOT, 'test/fixtures/store-v1/svc.mdb'), join(dataDir, 'svc.mdb'));
  const kv = openKvLmdbStore(dataDir);
  t.is(await kv.schemaVersion(), 1);
  t.true((await kv.tables.workspaces.scan([])).length > 0);
  await kv.close();
});
