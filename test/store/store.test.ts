import test from 'ava';
import { AppError } from '../../src/errors/app-error.js';
import { CURRENT_SCHEMA_VERSION, migrateStore, openStore, type Store } from '../../src/store/index.js';
import { removeDir, tempDir } from '../helpers/process.js';

/** The store's guarantees (src/store/types.ts), on a real LMDB file. */
let dir: string;
let store: Store;

test.before(async () => {
  dir = await tempDir();
  store = await openStore(dir);
  await migrateStore(store);
});

test.after.always(async () => {
  await store?.close();
  await removeDir(dir);
});

const ws = (id: string) => ({ id, name: id, createdAt: '2026-01-01T00:00:00.000Z' });

test('a write that throws midway applies nothing of itself, and the error reaches the caller', async (t) => {
  const err = await t.throwsAsync(
    store.write(async () => {
      await store.tables.workspaces.put('ws_half', ws('ws_half'));
      await store.tables.usersByEmail.put('half@example.com', 'usr_half');
      throw new AppError('invalid_request');
    }),
  );
  t.true(err instanceof AppError, 'a domain error passes through unchanged');
  t.is(await store.tables.workspaces.get('ws_half'), undefined);
  t.is(await store.tables.usersByEmail.get('half@example.com'), undefined);
});

test('an unexpected failure inside a write reaches the caller as it was thrown, and nothing is applied', async (t) => {
  const broken = new TypeError('disk on fire');
  const err = await t.throwsAsync(
    store.write(async () => {
      await store.tables.workspaces.put('ws_broken', ws('ws_broken'));
      throw broken;
    }),
  );
  t.is(err, broken);
  t.is(await store.tables.workspaces.get('ws_broken'), undefined);
});

test('puts and removes outside store.write are refused', async (t) => {
  await t.throwsAsync(store.tables.workspaces.put('ws_loose', ws('ws_loose')), { message: /inside store\.write/ });
  await t.throwsAsync(store.tables.workspaces.remove('ws_loose'), { message: /inside store\.write/ });
  t.is(await store.tables.workspaces.get('ws_loose'), undefined);
});

test('inside a write, store.tables is the write: its reads see its own puts, through any depth of calls', async (t) => {
  // A repo-like helper that knows nothing of the transaction.
  const repo = {
    async add(id: string) {
      await store.tables.workspaces.put(id, ws(id));
    },
    async has(id: string) {
      return store.tables.workspaces.has(id);
    },
  };
  // Another request's read, arranged outside the write and run while it is open: it does not
  // see the uncommitted put.
  let signal!: () => void;
  const opened = new Promise<void>((resolve) => (signal = resolve));
  const outsideRead = opened.then(() => repo.has('ws_ambient'));
  const seen = await store.write(async () => {
    t.true(store.inWrite());
    await repo.add('ws_ambient');
    const inside = await repo.has('ws_ambient');
    signal();
    return { inside, outside: await outsideRead };
  });
  t.deepEqual(seen, { inside: true, outside: false });
  t.false(store.inWrite());
  t.deepEqual(await store.tables.workspaces.get('ws_ambient'), ws('ws_ambient'));
});

test('a write started inside a write joins it: one transaction, all or nothing', async (t) => {
  await t.throwsAsync(
    store.write(async () => {
      await store.tables.workspaces.put('ws_outer', ws('ws_outer'));
      await store.write(async () => store.tables.workspaces.put('ws_inner', ws('ws_inner')));
      throw new AppError('invalid_request');
    }),
  );
  t.is(await store.tables.workspaces.get('ws_outer'), undefined);
  t.is(await store.tables.workspaces.get('ws_inner'), undefined, 'the inner write did not commit on its own');
});

test('work that started inside a write and outlives it reads the committed store and writes on its own', async (t) => {
  let committed!: () => void;
  const done = new Promise<void>((resolve) => (committed = resolve));
  let later!: Promise<unknown>;
  await store.write(async () => {
    await store.tables.workspaces.put('ws_before', ws('ws_before'));
    // A delivery started from inside the write, that goes on once the write is durable.
    later = (async () => {
      await done;
      const seen = await store.tables.workspaces.get('ws_before');
      await store.write(async () => store.tables.workspaces.put('ws_after', ws('ws_after')));
      return seen;
    })();
  });
  committed();
  t.deepEqual(await later, ws('ws_before'));
  t.deepEqual(await store.tables.workspaces.get('ws_after'), ws('ws_after'));
});

test('a write resolves with its value once it is stored, and every record of it lands', async (t) => {
  const value = await store.write(async () => {
    await store.tables.workspaces.put('ws_a', ws('ws_a'));
    await store.tables.members.put(['ws_a', 'usr_1'], {
      workspaceId: 'ws_a',
      userId: 'usr_1',
      role: 'owner',
      addedAt: 'x',
    });
    return 42;
  });
  t.is(value, 42);
  t.deepEqual(await store.tables.workspaces.get('ws_a'), ws('ws_a'));
  t.is((await store.tables.members.get(['ws_a', 'usr_1']))?.role, 'owner');
});

test('scan walks one prefix in key order, with after, limit and reverse', async (t) => {
  await store.write(async () => {
    for (const uid of ['usr_c', 'usr_a', 'usr_b'])
      await store.tables.userWorkspaces.put(['usr_scan', `ws_${uid}`], 'member');
    await store.tables.userWorkspaces.put(['usr_scan2', 'ws_x'], 'owner');
    await store.tables.userWorkspaces.put(['usr_sca', 'ws_y'], 'owner');
  });
  const keys = (rows: Array<{ key: unknown[] }>) => rows.map((r) => r.key[1]);
  t.deepEqual(keys(await store.tables.userWorkspaces.scan(['usr_scan'])), ['ws_usr_a', 'ws_usr_b', 'ws_usr_c']);
  t.deepEqual(keys(await store.tables.userWorkspaces.scan(['usr_scan'], { after: 'ws_usr_a' })), [
    'ws_usr_b',
    'ws_usr_c',
  ]);
  t.deepEqual(keys(await store.tables.userWorkspaces.scan(['usr_scan'], { limit: 2 })), ['ws_usr_a', 'ws_usr_b']);
  t.deepEqual(keys(await store.tables.userWorkspaces.scan(['usr_scan'], { reverse: true })), [
    'ws_usr_c',
    'ws_usr_b',
    'ws_usr_a',
  ]);
});

test('scan with startAfter resumes after a whole key at any depth, on tuple and string keys alike', async (t) => {
  await store.write(async () => {
    for (const [wid, id] of [
      ['ws_r1', 'b'],
      ['ws_r1', 'a'],
      ['ws_r2', 'a'],
      ['ws_r10', 'z'],
    ] as const)
      await store.tables.tasks.put([wid, id], '2026-01-01T00:00:00.000Z');
    for (const nonce of ['n-c', 'n-a', 'n-b'])
      await store.tables.oauthConsentsUsed.put(nonce, '2026-01-01T00:00:00.000Z');
  });
  const keys = (rows: Array<{ key: unknown[] }>) => rows.map((r) => r.key.join('/'));
  const all = keys(await store.tables.tasks.scan([]));
  t.deepEqual(all, ['ws_r1/a', 'ws_r1/b', 'ws_r10/z', 'ws_r2/a']);
  t.deepEqual(keys(await store.tables.tasks.scan([], { startAfter: ['ws_r1', 'a'] })), all.slice(1));
  t.deepEqual(keys(await store.tables.tasks.scan([], { startAfter: ['ws_r1', 'b'], limit: 1 })), ['ws_r10/z']);
  t.deepEqual(
    keys(await store.tables.tasks.scan([], { startAfter: ['ws_r1', 'aa'] })),
    all.slice(1),
    'a key that is gone',
  );
  t.deepEqual(keys(await store.tables.tasks.scan([], { startAfter: ['ws_r2', 'a'] })), []);
  t.deepEqual(
    keys(await store.tables.tasks.scan(['ws_r1'], { startAfter: ['ws_r1', 'a'] })),
    ['ws_r1/b'],
    'within a prefix',
  );
  t.deepEqual(keys(await store.tables.oauthConsentsUsed.scan([], { startAfter: ['n-a'] })), ['n-b', 'n-c']);
});

test('the schema version is recorded, and a second migration run changes nothing', async (t) => {
  t.is(await store.schemaVersion(), CURRENT_SCHEMA_VERSION);
  const again = await migrateStore(store);
  t.deepEqual(again.applied, []);
  t.is(again.from, CURRENT_SCHEMA_VERSION);
});

test('writes that share a commit stay atomic one by one: a failing one leaves the others whole', async (t) => {
  const results = await Promise.allSettled(
    Array.from({ length: 20 }, (_v, i) =>
      store.write(async () => {
        await store.tables.workspaces.put(`ws_batch_${i}`, ws(`ws_batch_${i}`));
        await store.tables.usersByEmail.put(`batch${i}@example.com`, `usr_batch_${i}`);
        if (i % 5 === 3) throw new AppError('invalid_request');
        return i;
      }),
    ),
  );
  for (const [i, r] of results.entries()) {
    const failed = i % 5 === 3;
    t.is(r.status, failed ? 'rejected' : 'fulfilled', `write ${i}`);
    t.is((await store.tables.workspaces.get(`ws_batch_${i}`)) === undefined, failed, `workspace of write ${i}`);
    t.is((await store.tables.usersByEmail.get(`batch${i}@example.com`)) === undefined, failed, `email of write ${i}`);
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
  const other = await openStore(data);
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
