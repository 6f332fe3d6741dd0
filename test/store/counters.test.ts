import test from 'ava';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { open } from 'lmdb';
import { openPostgresCounters } from '../../src/store/counters-postgres.js';
import { StoreError } from '../../src/store/errors.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/types.js';
import { freePort } from '../helpers/pg-cluster.js';
import { freshDatabase, type TestDatabase } from '../helpers/postgres.js';
import { removeDir, tempDir } from '../helpers/process.js';

/**
 * The rate limits' shared counters (src/store/counters.ts) on both backends, through the store's
 * own `counters`: a limit is never passed by concurrent counts, windows and scopes are apart,
 * ended windows are swept; on LMDB a file of an earlier boot is removed, never read; a count the
 * database does not answer is a StoreError, so that a limit fails closed. That processes share the
 * count is held by test/multi/ (two workers, two instances).
 */

const databases: TestDatabase[] = [];
const dirs: string[] = [];
const stores: Store[] = [];
test.after.always(async () => {
  for (const s of stores) await s.close().catch(() => undefined);
  for (const db of databases) await db.drop().catch(() => undefined);
  for (const dir of dirs) await removeDir(dir);
});

async function lmdbStore(): Promise<{ store: Store; dataDir: string }> {
  const dataDir = await tempDir('svc-counters-');
  dirs.push(dataDir);
  const store = await openStore(dataDir);
  stores.push(store);
  return { store, dataDir };
}

async function postgresStore(): Promise<{ store: Store; dataDir: string }> {
  const db = await freshDatabase();
  databases.push(db);
  const dataDir = await tempDir('svc-counters-pg-');
  dirs.push(dataDir);
  const store = await openStore(dataDir, { url: db.url });
  stores.push(store);
  return { store, dataDir };
}

const MINUTE = 60_000;
const now = Math.floor(Date.now() / MINUTE) * MINUTE + 1000;
const window = { end: now - 1000 + MINUTE, now };

for (const [name, make] of [
  ['lmdb', lmdbStore],
  ['postgres', postgresStore],
] as const) {
  test(`${name}: 60 concurrent counts under a limit of 25 allow exactly 25, each count given once`, async (t) => {
    const { store } = await make();
    const answers = await Promise.all(
      Array.from({ length: 60 }, () => store.counters.hit('gate', 'agt_one', window, 25)),
    );
    const allowed = answers.filter((a) => a.allowed);
    t.is(allowed.length, 25);
    t.deepEqual(
      allowed.map((a) => a.count).sort((x, y) => x - y),
      Array.from({ length: 25 }, (_, i) => i + 1),
    );
    t.true(answers.filter((a) => !a.allowed).every((a) => a.count === 25));
  });

  test(`${name}: windows, scopes and keys are counted apart; a limit of 0 allows nothing`, async (t) => {
    const { store } = await make();
    t.true((await store.counters.hit('public', '10.0.0.1', window, 1)).allowed);
    t.false((await store.counters.hit('public', '10.0.0.1', window, 1)).allowed);
    t.true((await store.counters.hit('signIn', '10.0.0.1', window, 1)).allowed, 'another scope');
    t.true((await store.counters.hit('public', '10.0.0.2', window, 1)).allowed, 'another key');
    const next = { end: window.end + MINUTE, now: window.end };
    t.true((await store.counters.hit('public', '10.0.0.1', next, 1)).allowed, 'the next window');
    t.false((await store.counters.hit('mcpTool', 'w/a/s/t', window, 0)).allowed);
  });
}

test('postgres: ended windows are swept, the current one kept', async (t) => {
  const { store } = await postgresStore();
  await store.counters.hit('gate', 'agt_old', window, 10);
  const next = { end: window.end + MINUTE, now: window.end + 1 };
  // The sweep runs at most once a second per process, beside a count.
  await new Promise((resolve) => setTimeout(resolve, 1100));
  await store.counters.hit('gate', 'agt_new', next, 10);
  const keys = async () => (await store.tables.rateCounters.scan([])).map((e) => e.key);
  let left = await keys();
  for (let i = 0; i < 50 && left.length > 1; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    left = await keys();
  }
  t.deepEqual(left, [[next.end, 'gate', 'agt_new']]);
});

test('lmdb: ended windows are swept, the current one kept; the counts live beside the store, not in it', async (t) => {
  const { store, dataDir } = await lmdbStore();
  await store.counters.hit('gate', 'agt_old', window, 10);
  await new Promise((resolve) => setTimeout(resolve, 1100));
  const next = { end: window.end + MINUTE, now: window.end + 1 };
  await store.counters.hit('gate', 'agt_new', next, 10);
  t.deepEqual(await store.tables.rateCounters.scan([]), [], 'nothing in the store file');
  const file = readdirSync(dataDir).find((f) => /^counters-.*\.mdb$/.test(f));
  t.truthy(file, readdirSync(dataDir).join(', '));
  const reader = open({ path: join(dataDir, file!), readOnly: true });
  try {
    t.deepEqual([...reader.getKeys()], [[next.end, 'gate', 'agt_new']]);
  } finally {
    await reader.close();
  }
});

test('lmdb: the counters file of an earlier boot is removed, never opened', async (t) => {
  const dataDir = await tempDir('svc-counters-boot-');
  dirs.push(dataDir);
  const stale = join(dataDir, 'counters-0000earlierboot.mdb');
  // Not an LMDB file at all: opening it would fail (or worse, were it torn pages).
  writeFileSync(stale, 'torn pages from before a machine crash');
  writeFileSync(`${stale}-lock`, '');
  const store = await openStore(dataDir);
  stores.push(store);
  t.true((await store.counters.hit('gate', 'agt_x', window, 3)).allowed);
  t.false(existsSync(stale));
  t.false(existsSync(`${stale}-lock`));
  t.true(existsSync(join(dataDir, 'svc.mdb')), 'the store is untouched');
});

test('postgres: a database that does not answer is StoreError unavailable, naming where, never the password', async (t) => {
  const port = await freePort();
  const counters = openPostgresCounters(`postgres://svc:s3cret-pw@127.0.0.1:${port}/svc`);
  try {
    const err = await t.throwsAsync(counters.hit('gate', 'agt_x', window, 10));
    t.true(err instanceof StoreError, String(err));
    t.is((err as StoreError).code, 'unavailable');
    t.regex(err!.message, new RegExp(`127\\.0\\.0\\.1:${port}`));
    t.false(err!.message.includes('s3cret-pw'));
  } finally {
    await counters.close();
  }
});
