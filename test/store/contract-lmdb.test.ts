import test from 'ava';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { openStore } from '../../src/store/open.js';
import { removeDir, ROOT, tempDir } from '../helpers/process.js';
import { contractSuite } from './contract-suite.js';

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
