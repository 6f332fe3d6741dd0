import test from 'ava';
import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { migrateStore, openStore } from '../../src/store/index.js';
import { removeDir, tempDir } from '../helpers/process.js';

/** Migration 3 indexes the sessions a schema-2 store already holds, so a password change ends them. */
test('sessions of a schema-2 store are indexed by person after migrating', async (t) => {
  const dir = await tempDir();
  const data = join(dir, 'data');
  await mkdir(data);
  await copyFile(fileURLToPath(new URL('../fixtures/store-v1/svc.mdb', import.meta.url)), join(data, 'svc.mdb'));
  const store = await openStore(data);
  try {
    await migrateStore(store, { target: 2 });
    await store.write(async () => {
      // As schema 2 wrote sessions: the session record only.
      await store.tables.sessions.put('hash-a', {
        userId: 'usr_V1OwnerAAAAAAAAAAAAAAA',
        createdAt: 'x',
        expiresAt: '2030-01-01T00:00:00.000Z',
      });
      await store.tables.sessions.put('hash-b', {
        userId: 'usr_other',
        createdAt: 'x',
        expiresAt: '2030-01-02T00:00:00.000Z',
      });
    });
    t.deepEqual(await store.tables.sessionsByUser.scan(['usr_V1OwnerAAAAAAAAAAAAAAA']), []);
    const result = await migrateStore(store, { target: 3 });
    t.deepEqual(
      result.applied.map((m) => m.version),
      [3],
    );
    t.is(await store.schemaVersion(), 3);
    t.deepEqual(
      (await store.tables.sessionsByUser.scan(['usr_V1OwnerAAAAAAAAAAAAAAA'])).map((e) => e.key),
      [['usr_V1OwnerAAAAAAAAAAAAAAA', 'hash-a']],
    );
    t.is(await store.tables.sessionsByUser.get(['usr_other', 'hash-b']), '2030-01-02T00:00:00.000Z');
    t.truthy(await store.tables.sessions.get('hash-a'), 'no session was lost');
  } finally {
    await store.close();
    await removeDir(dir);
  }
});
