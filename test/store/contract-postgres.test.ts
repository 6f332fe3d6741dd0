import test from 'ava';
import pg from 'pg';
import { StoreError } from '../../src/store/errors.js';
import { openStore } from '../../src/store/open.js';
import type { WriteOptions } from '../../src/store/types.js';
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

/** Two stores over one database, as two instances: each its own pool and its own queue. */
async function twoInstances(): Promise<[Awaited<ReturnType<typeof openStore>>, Awaited<ReturnType<typeof openStore>>]> {
  const db = await database();
  const first = await openStore('/nonexistent', { url: db.url });
  const second = await openStore('/nonexistent', { url: db.url });
  await first.write(async (tx) => {
    await tx.agents.put(['w', 'a'], { id: 'a' } as never);
    await tx.agents.put(['w', 'b'], { id: 'b' } as never);
  });
  return [first, second];
}

const onAgent = (aid: string): WriteOptions => ({ serializeOn: [['agents', ['w', aid]]] });

function latch(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

test('postgres: writes serialized on one row run one after another: the second waits, then reads what the first committed, and never runs again', async (t) => {
  const [one, two] = await twoInstances();
  try {
    const started = latch();
    const release = latch();
    const first = one.write(async (tx) => {
      const n = (await tx.periodUsage.get('count')) ?? 0;
      started.open();
      await release.promise;
      await tx.periodUsage.put('count', n + 1);
    }, onAgent('a'));
    await started.promise;
    let runs = 0;
    let seen: number | undefined;
    const second = two.write(async (tx) => {
      runs += 1;
      seen = (await tx.periodUsage.get('count')) ?? 0;
      await tx.periodUsage.put('count', seen + 1);
    }, onAgent('a'));
    // The second waits on the row while the first holds it.
    await new Promise((r) => setTimeout(r, 300));
    t.is(runs, 1);
    t.is(seen, undefined, 'the second has read nothing while the first holds the row');
    release.open();
    await Promise.all([first, second]);
    t.is(seen, 1);
    t.is(runs, 1);
    t.is(await one.tables.periodUsage.get('count'), 2);
  } finally {
    await one.close();
    await two.close();
  }
});

test('postgres: writes serialized on two different rows run at once; a plain write changing a row one of them read makes it run again, its update not lost', async (t) => {
  const [one, two] = await twoInstances();
  try {
    const started = latch();
    const release = latch();
    let runs = 0;
    const held = one.write(async (tx) => {
      runs += 1;
      const n = (await tx.periodUsage.get('shared')) ?? 0;
      started.open();
      await release.promise;
      await tx.periodUsage.put('shared', n + 1);
    }, onAgent('a'));
    await started.promise;
    // Another agent's write commits while the first is open: nothing of theirs is shared.
    await two.write(async (tx) => tx.periodUsage.put('other', 1), onAgent('b'));
    // A plain write changes the row the held one read, and commits first.
    await two.write(async (tx) => tx.periodUsage.put('shared', 10));
    release.open();
    await held;
    t.is(runs, 2, 'the held write ran again on the changed row');
    t.is(await one.tables.periodUsage.get('shared'), 11);
    t.is(await one.tables.periodUsage.get('other'), 1);
  } finally {
    await one.close();
    await two.close();
  }
});
