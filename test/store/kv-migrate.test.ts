import test from 'ava';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { StoreError } from '../../src/store/errors.js';
import type { KvStore } from '../../src/store/kv.js';
import { openKvLmdbStore } from '../../src/store/kv-lmdb.js';
import { ensureKvSchema, migrateKvStore } from '../../src/store/kv-migrate.js';
import { openKvPostgresStore } from '../../src/store/kv-postgres.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { migrateStore } from '../../src/store/migrate.js';
import { CURRENT_SCHEMA_VERSION } from '../../src/store/migrations/index.js';
import { tableNames } from '../../src/store/tables.js';
import { freshDatabase, type TestDatabase } from '../helpers/postgres.js';
import { removeDir, ROOT, tempDir } from '../helpers/process.js';

/** The async migration runner (kv-migrate.ts): the same numbered migrations on LMDB and PostgreSQL. */

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

async function dump(store: KvStore): Promise<string> {
  const out: Record<string, unknown> = {};
  for (const name of tableNames) out[name] = await store.tables[name].scan([]);
  return JSON.stringify(out);
}

test('lmdb: the async runner brings the v1 fixture to the same state as today’s runner', async (t) => {
  const [a, b] = [await fixtureCopy(), await fixtureCopy()];
  const sync = openLmdbStore(a);
  const syncResult = await migrateStore(sync);
  await sync.close();
  const kv = openKvLmdbStore(b);
  const kvResult = await migrateKvStore(kv);
  t.deepEqual(kvResult, syncResult);
  t.is(await kv.schemaVersion(), CURRENT_SCHEMA_VERSION);
  const migratedBySync = openKvLmdbStore(a);
  t.is(await dump(kv), await dump(migratedBySync));
  t.true((await kv.tables.userWorkspaces.scan([])).length > 0, 'migration 2 indexed the fixture’s members');
  t.is(await ensureKvSchema(kv, { migrate: false }), null);
  await kv.close();
  await migratedBySync.close();
});

test('lmdb: an older store is refused without --migrate; a newer one always', async (t) => {
  const dir = await fixtureCopy();
  const kv = openKvLmdbStore(dir);
  const older = await t.throwsAsync(ensureKvSchema(kv, { migrate: false }));
  t.is((older as StoreError).code, 'older_schema');
  t.regex(older!.message, /svc migrate/);
  await kv.write(async (tx) => tx.meta.put('schemaVersion', CURRENT_SCHEMA_VERSION + 1));
  const newer = await t.throwsAsync(ensureKvSchema(kv, { migrate: true }));
  t.is((newer as StoreError).code, 'newer_schema');
  await kv.close();
});

test('postgres: an empty database is set up to the current schema; two runners at once apply each step once', async (t) => {
  const db = await freshDatabase();
  databases.push(db);
  const [one, two] = [await openKvPostgresStore(db.url), await openKvPostgresStore(db.url)];
  const now = () => new Date('2026-11-24T06:00:00.000Z');
  const [r1, r2] = await Promise.all([migrateKvStore(one, { now }), migrateKvStore(two, { now })]);
  t.is(r1.to, CURRENT_SCHEMA_VERSION);
  t.is(r2.to, CURRENT_SCHEMA_VERSION);
  t.is(await one.schemaVersion(), CURRENT_SCHEMA_VERSION);
  t.is(await one.tables.meta.get('createdAt'), '2026-11-24T06:00:00.000Z');
  t.is(await ensureKvSchema(two, { migrate: false }), null);
  await one.close();
  await two.close();
});

test('postgres: migrations index what an older store holds, as on LMDB', async (t) => {
  const db = await freshDatabase();
  databases.push(db);
  const store = await openKvPostgresStore(db.url);
  await migrateKvStore(store, { target: 1 });
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
  const older = await t.throwsAsync(ensureKvSchema(store, { migrate: false }));
  t.is((older as StoreError).code, 'older_schema');
  const result = await ensureKvSchema(store, { migrate: true });
  t.deepEqual(
    result?.applied.map((m) => m.version),
    [2, 3, 4].filter((v) => v <= CURRENT_SCHEMA_VERSION),
  );
  t.is(await store.tables.userWorkspaces.get(['usr_1', 'wid_1']), 'owner');
  t.deepEqual((await store.tables.agents.get(['wid_1', 'agt_1']))?.holds, []);
  await store.close();
});
