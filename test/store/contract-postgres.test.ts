import test from 'ava';
import pg from 'pg';
import { StoreError } from '../../src/store/errors.js';
import { openStore } from '../../src/store/open.js';
import { freePort } from '../helpers/pg-cluster.js';
import { freshDatabase, type TestDatabase } from '../helpers/postgres.js';
import { removeDir, tempDir } from '../helpers/process.js';
import { contractSuite } from './contract-suite.js';

/**
 * The store contract (contract-suite.ts) on the PostgreSQL backend, each store in a fresh database
 * of the run's private cluster (helpers/postgres.ts), and what only PostgreSQL has: an unreachable
 * server, a connection lost mid-write, backup refused.
 */

const databases: TestDatabase[] = [];
const dirs: string[] = [];
test.after.always(async () => {
  for (const db of databases) await db.drop().catch(() => undefined);
  for (const dir of dirs) await removeDir(dir);
});

async function database(): Promise<TestDatabase> {
  const db = await freshDatabase();
  databases.push(db);
  return db;
}

contractSuite(test, {
  name: 'postgres',
  async open() {
    const db = await database();
    const dataDir = await tempDir('svc-kv-pg-');
    dirs.push(dataDir);
    return {
      store: await openStore(dataDir, { url: db.url }),
      spec: { dataDir, url: db.url },
      reopen: () => openStore(dataDir, { url: db.url }),
    };
  },
});

test('postgres: an unreachable server is a StoreError naming host and port, never the password', async (t) => {
  const port = await freePort();
  const err = await t.throwsAsync(openStore('/nonexistent', { url: `postgres://svc:s3cret-pw@127.0.0.1:${port}/svc` }));
  t.true(err instanceof StoreError);
  t.is((err as StoreError).code, 'cannot_open');
  t.regex(err!.message, new RegExp(`127\\.0\\.0\\.1:${port} \\(database svc\\)`));
  t.regex(err!.message, /--store or SVC_STORE_URL/);
  t.false(err!.message.includes('s3cret-pw'));
  t.false(JSON.stringify(err, Object.getOwnPropertyNames(err)).includes('s3cret-pw'));
});

test('postgres: a connection lost mid-write rejects with StoreError unavailable; the pool recovers', async (t) => {
  const db = await database();
  const store = await openStore('/nonexistent', { url: db.url });
  const killer = new pg.Client({ connectionString: db.url });
  await killer.connect();
  try {
    const err = await t.throwsAsync(
      store.write(async (tx) => {
        await tx.periodUsage.put('lost', 1);
        // A read sends the transaction's BEGIN (writes wait for the COMMIT): it is open on the server.
        await tx.periodUsage.get('lost0');
        await killer.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
           WHERE datname = current_database() AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'`,
        );
        await tx.periodUsage.put('lost2', 2);
      }),
    );
    t.true(err instanceof StoreError, String(err));
    t.is((err as StoreError).code, 'unavailable');
    t.false(store.writable());
    t.is(await store.tables.periodUsage.get('lost'), undefined, 'nothing of the write applied');
    await store.write(async (tx) => tx.periodUsage.put('after', 3));
    t.is(await store.tables.periodUsage.get('after'), 3);
    t.true(store.writable());
  } finally {
    await killer.end();
    await store.close();
  }
});

test('postgres: backup refuses and points to pg_dump; unknown store schemes are refused', async (t) => {
  const db = await database();
  const store = await openStore('/nonexistent', { url: db.url });
  t.is(store.backend, 'postgres');
  const err = await t.throwsAsync(store.backup('/tmp/x'));
  t.regex(err!.message, /pg_dump/);
  t.is((err as StoreError).code, 'unsupported');
  await store.close();
  const bad = await t.throwsAsync(openStore('/nonexistent', { url: 'mysql://root:pw@h/db' }));
  t.regex(bad!.message, /unknown store mysql:/);
  t.false(bad!.message.includes('pw'));
});
