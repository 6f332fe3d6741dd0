import test from 'ava';
import { AppError } from '../../src/errors/app-error.js';
import { CURRENT_SCHEMA_VERSION, migrateStore, openStore, StoreError, type Store } from '../../src/store/index.js';
import { removeDir, tempDir } from '../helpers/process.js';

/** The store's guarantees (src/store/types.ts), on a real LMDB file. */
let dir: string;
let store: Store;

test.before(async () => {
  dir = await tempDir();
  store = openStore(dir);
  await migrateStore(store);
});

test.after.always(async () => {
  await store?.close();
  await removeDir(dir);
});

const ws = (id: string) => ({ id, name: id, createdAt: '2026-01-01T00:00:00.000Z' });

test('a write that throws midway applies nothing of itself, and the error reaches the caller', async (t) => {
  const err = await t.throwsAsync(
    store.write(() => {
      store.tables.workspaces.put('ws_half', ws('ws_half'));
      store.tables.usersByEmail.put('half@example.com', 'usr_half');
      throw new AppError('invalid_request');
    }),
  );
  t.true(err instanceof AppError, 'a domain error passes through unchanged');
  t.is(store.tables.workspaces.get('ws_half'), undefined);
  t.is(store.tables.usersByEmail.get('half@example.com'), undefined);
});

test('an unexpected failure inside a write is a StoreError, and nothing is applied', async (t) => {
  const err = await t.throwsAsync(
    store.write(() => {
      store.tables.workspaces.put('ws_broken', ws('ws_broken'));
      throw new TypeError('disk on fire');
    }),
  );
  t.true(err instanceof StoreError);
  t.is((err as StoreError).code, 'write_failed');
  t.is(store.tables.workspaces.get('ws_broken'), undefined);
});

test('puts and removes outside store.write are refused', (t) => {
  t.throws(() => store.tables.workspaces.put('ws_loose', ws('ws_loose')), { message: /inside store\.write/ });
  t.throws(() => store.tables.workspaces.remove('ws_loose'), { message: /inside store\.write/ });
});

test('a write resolves with its value once it is stored, and every record of it lands', async (t) => {
  const value = await store.write(() => {
    store.tables.workspaces.put('ws_a', ws('ws_a'));
    store.tables.members.put(['ws_a', 'usr_1'], { workspaceId: 'ws_a', userId: 'usr_1', role: 'owner', addedAt: 'x' });
    return 42;
  });
  t.is(value, 42);
  t.deepEqual(store.tables.workspaces.get('ws_a'), ws('ws_a'));
  t.is(store.tables.members.get(['ws_a', 'usr_1'])?.role, 'owner');
});

test('scan walks one prefix in key order, with after, limit and reverse', async (t) => {
  await store.write(() => {
    for (const uid of ['usr_c', 'usr_a', 'usr_b']) store.tables.userWorkspaces.put(['usr_scan', `ws_${uid}`], 'member');
    store.tables.userWorkspaces.put(['usr_scan2', 'ws_x'], 'owner');
    store.tables.userWorkspaces.put(['usr_sca', 'ws_y'], 'owner');
  });
  const keys = (rows: Array<{ key: unknown[] }>) => rows.map((r) => r.key[1]);
  t.deepEqual(keys(store.tables.userWorkspaces.scan(['usr_scan'])), ['ws_usr_a', 'ws_usr_b', 'ws_usr_c']);
  t.deepEqual(keys(store.tables.userWorkspaces.scan(['usr_scan'], { after: 'ws_usr_a' })), ['ws_usr_b', 'ws_usr_c']);
  t.deepEqual(keys(store.tables.userWorkspaces.scan(['usr_scan'], { limit: 2 })), ['ws_usr_a', 'ws_usr_b']);
  t.deepEqual(keys(store.tables.userWorkspaces.scan(['usr_scan'], { reverse: true })), [
    'ws_usr_c',
    'ws_usr_b',
    'ws_usr_a',
  ]);
});

test('scan with startAfter resumes after a whole key at any depth, on tuple and string keys alike', async (t) => {
  await store.write(() => {
    for (const [wid, id] of [
      ['ws_r1', 'b'],
      ['ws_r1', 'a'],
      ['ws_r2', 'a'],
      ['ws_r10', 'z'],
    ] as const)
      store.tables.tasks.put([wid, id], '2026-01-01T00:00:00.000Z');
    for (const nonce of ['n-c', 'n-a', 'n-b']) store.tables.oauthConsentsUsed.put(nonce, '2026-01-01T00:00:00.000Z');
  });
  const keys = (rows: Array<{ key: unknown[] }>) => rows.map((r) => r.key.join('/'));
  const all = keys(store.tables.tasks.scan([]));
  t.deepEqual(all, ['ws_r1/a', 'ws_r1/b', 'ws_r10/z', 'ws_r2/a']);
  t.deepEqual(keys(store.tables.tasks.scan([], { startAfter: ['ws_r1', 'a'] })), all.slice(1));
  t.deepEqual(keys(store.tables.tasks.scan([], { startAfter: ['ws_r1', 'b'], limit: 1 })), ['ws_r10/z']);
  t.deepEqual(keys(store.tables.tasks.scan([], { startAfter: ['ws_r1', 'aa'] })), all.slice(1), 'a key that is gone');
  t.deepEqual(keys(store.tables.tasks.scan([], { startAfter: ['ws_r2', 'a'] })), []);
  t.deepEqual(keys(store.tables.tasks.scan(['ws_r1'], { startAfter: ['ws_r1', 'a'] })), ['ws_r1/b'], 'within a prefix');
  t.deepEqual(keys(store.tables.oauthConsentsUsed.scan([], { startAfter: ['n-a'] })), ['n-b', 'n-c']);
});

test('the schema version is recorded, and a second migration run changes nothing', async (t) => {
  t.is(store.schemaVersion(), CURRENT_SCHEMA_VERSION);
  const again = await migrateStore(store);
  t.deepEqual(again.applied, []);
  t.is(again.from, CURRENT_SCHEMA_VERSION);
});

test('writes that share a commit stay atomic one by one: a failing one leaves the others whole', async (t) => {
  const results = await Promise.allSettled(
    Array.from({ length: 20 }, (_v, i) =>
      store.write(() => {
        store.tables.workspaces.put(`ws_batch_${i}`, ws(`ws_batch_${i}`));
        store.tables.usersByEmail.put(`batch${i}@example.com`, `usr_batch_${i}`);
        if (i % 5 === 3) throw new AppError('invalid_request');
        return i;
      }),
    ),
  );
  for (const [i, r] of results.entries()) {
    const failed = i % 5 === 3;
    t.is(r.status, failed ? 'rejected' : 'fulfilled', `write ${i}`);
    t.is(store.tables.workspaces.get(`ws_batch_${i}`) === undefined, failed, `workspace of write ${i}`);
    t.is(store.tables.usersByEmail.get(`batch${i}@example.com`) === undefined, failed, `email of write ${i}`);
  }
});

test("the data dir, the store files and the master key are the operator's alone, even in a folder that was open", async (t) => {
  const { chmod, mkdir: mk, stat } = await import('node:fs/promises');
  const { join: j } = await import('node:path');
  const { loadMasterKey } = await import('../../src/store/index.js');
  const base = await tempDir();
  const data = j(base, 'data');
  await mk(data);
  await chmod(data, 0o755);
  const other = openStore(data);
  loadMasterKey(data, null);
  await other.close();
  t.is((await stat(data)).mode & 0o777, 0o700);
  t.is((await stat(j(data, 'svc.mdb'))).mode & 0o777, 0o600);
  t.is((await stat(j(data, 'master.key'))).mode & 0o777, 0o600);
  await removeDir(base);
});

test('a master key file is created whole once, and read back the same by later openings', async (t) => {
  const { loadMasterKey } = await import('../../src/store/index.js');
  const { readdir } = await import('node:fs/promises');
  const base = await tempDir();
  const keys = Array.from({ length: 5 }, () => loadMasterKey(base, null).toString('hex'));
  t.is(new Set(keys).size, 1);
  t.is(keys[0]!.length, 64);
  t.deepEqual(await readdir(base), ['master.key'], 'no temporary file is left behind');
  await removeDir(base);
});
