import test from 'ava';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { StoreError } from '../../src/store/errors.js';
import { ensureSchema, migrateStore } from '../../src/store/migrate.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/types.js';
import { CURRENT_SCHEMA_VERSION } from '../../src/store/migrations/index.js';
import { tableNames } from '../../src/store/tables.js';
import { freshDatabase, type TestDatabase } from '../helpers/postgres.js';
import { removeDir, ROOT, tempDir } from '../helpers/process.js';

/** The migration runner (migrate.ts): the same numbered migrations on LMDB and PostgreSQL. */

const dirs: string[] = [];
const databases: TestDatabase[] = [];
test.after.always(async () => {
  for (const dir of dirs) await removeDir(dir);
  for (const db of databases) await db.drop().catch(() => undefined);
});

async function fixtureCopy(): Promise<string> {
  const dir = await tempDir('svc-kvmig-');
  dirs.push(dir);
  await cp(join(ROOT, 'test/fixtures/store-v1/svc.mdb'), join(dir, 'svc.mdb'));
  return dir;
}

async function dump(store: Store): Promise<string> {
  const out: Record<string, unknown> = {};
  for (const name of tableNames) out[name] = await store.tables[name].scan([]);
  return JSON.stringify(out);
}

test('lmdb: the v1 fixture is brought to the current schema, and a second run applies nothing', async (t) => {
  const store = await openStore(await fixtureCopy(), { create: false });
  const before = await dump(store);
  const result = await migrateStore(store);
  t.is(result.from, 1);
  t.is(result.to, CURRENT_SCHEMA_VERSION);
  t.deepEqual(
    result.applied.map((m) => m.version),
    [2, 3, 4].filter((v) => v <= CURRENT_SCHEMA_VERSION),
  );
  t.is(await store.schemaVersion(), CURRENT_SCHEMA_VERSION);
  t.not(await dump(store), before);
  t.true((await store.tables.userWorkspaces.scan([])).length > 0, 'migration 2 indexed the fixture’s members');
  const migrated = await dump(store);
  const again = await migrateStore(store);
  t.deepEqual(again.applied, []);
  t.is(await dump(store), migrated);
  t.is(await ensureSchema(store, { migrate: false }), null);
  await store.close();
});

test('lmdb: an older store is refused without --migrate; a newer one always', async (t) => {
  const dir = await fixtureCopy();
  const kv = await openStore(dir, { create: false });
  const older = await t.throwsAsync(ensureSchema(kv, { migrate: false }));
  t.is((older as StoreError).code, 'older_schema');
  t.regex(older!.message, /svc migrate/);
  await kv.write(async (tx) => tx.meta.put('schemaVersion', CURRENT_SCHEMA_VERSION + 1));
  const newer = await t.throwsAsync(ensureSchema(kv, { migrate: true }));
  t.is((newer as StoreError).code, 'newer_schema');
  await kv.close();
});

test('postgres: an empty database is set up to the current schema; two runners at once apply each step once', async (t) => {
  const db = await freshDatabase();
  databases.push(db);
  const [one, two] = [
    await openStore('/nonexistent', { url: db.url }),
    await openStore('/nonexistent', { url: db.url }),
  ];
  const now = () => new Date('2026-11-24T06:00:00.000Z');
  const [r1, r2] = await Promise.all([migrateStore(one, { now }), migrateStore(two, { now })]);
  t.is(r1.to, CURRENT_SCHEMA_VERSION);
  t.is(r2.to, CURRENT_SCHEMA_VERSION);
  t.is(await one.schemaVersion(), CURRENT_SCHEMA_VERSION);
  t.is(await one.tables.meta.get('createdAt'), '2026-11-24T06:00:00.000Z');
  t.is(await ensureSchema(two, { migrate: false }), null);
  await one.close();
  await two.close();
});

test('postgres: migrations index what an older store holds, as on LMDB', async (t) => {
  const db = await freshDatabase();
  databases.push(db);
  const store = await openStore('/nonexistent', { url: db.url });
  await migrateStore(store, { target: 1 });
  await store.write(async (tx) => {
    await tx.members.put(['wid_1', 'usr_1'], { workspaceId: 'wid_1', userId: 'usr_1', role: 'owner', addedAt: 'x' });
    await tx.agents.put(['wid_1', 'agt_1'], {
      id: 'agt_1',
      workspaceId: 'wid_1',
      name: 'a',
      actsFor: null,
      tags: [],
      createdAt: 'x',
      removedAt: null,
    });
  });
  const older = await t.throwsAsync(ensureSchema(store, { migrate: false }));
  t.is((older as StoreError).code, 'older_schema');
  const result = await ensureSchema(store, { migrate: true });
  t.deepEqual(
    result?.applied.map((m) => m.version),
    [2, 3, 4].filter((v) => v <= CURRENT_SCHEMA_VERSION),
  );
  t.is(await store.tables.userWorkspaces.get(['usr_1', 'wid_1']), 'owner');
  t.deepEqual((await store.tables.agents.get(['wid_1', 'agt_1']))?.holds, []);
  await store.close();
});
