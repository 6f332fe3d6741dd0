import test from 'ava';
import { CURRENT_SCHEMA_VERSION } from '../../src/store/index.js';
import { copyFile, mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { bearer, call } from '../helpers/http.js';
import { removeDir, svc, tempDir } from '../helpers/process.js';
import { serveInProcess } from '../helpers/in-process.js';
import { fixedClock, withStore } from '../helpers/store.js';

test('svc backup copies the store while the server runs; the copy serves the same keys', async (t) => {
  const dir = await tempDir();
  const server = await serveInProcess({ dataDir: join(dir, 'live') });
  try {
    const minted = await svc(['keys', 'create', '--scope', 'admin', '--local', '--data-dir', server.dataDir, '--json']);
    t.is(minted.code, 0, minted.stderr);
    const { key } = JSON.parse(minted.stdout) as { key: string };

    const out = join(dir, 'copy.mdb');
    const backup = await svc(['backup', '--data-dir', server.dataDir, '--out', out, '--json']);
    t.is(backup.code, 0, backup.stderr);
    t.deepEqual(JSON.parse(backup.stdout), { out, schemaVersion: CURRENT_SCHEMA_VERSION });
    t.is((await stat(out)).mode & 0o777, 0o600);

    const again = await svc(['backup', '--data-dir', server.dataDir, '--out', out]);
    t.is(again.code, 2, 'an existing file is never overwritten');

    const restored = join(dir, 'restored');
    await mkdir(restored);
    await copyFile(out, join(restored, 'svc.mdb'));
    await copyFile(join(server.dataDir, 'master.key'), join(restored, 'master.key'));
    const second = await serveInProcess({ dataDir: restored });
    try {
      const res = await call(second.url, 'GET', '/v1/whoami', { headers: bearer(key) });
      t.is(res.status, 200);
      t.is(res.body.scope, 'admin');
      t.is(second.boot.owner, undefined, 'the restored store keeps its workspace: no new bootstrap');
    } finally {
      await second.stop();
    }
  } finally {
    await server.stop();
    await removeDir(dir);
  }
});

test('svc backup of a data dir without a store exits 3', async (t) => {
  const dir = await tempDir();
  const res = await svc(['backup', '--data-dir', join(dir, 'empty'), '--out', join(dir, 'x.mdb')]);
  t.is(res.code, 3);
  await removeDir(dir);
});

test('space freed by the sweeper is reclaimed by svc backup: the copy is compacted and restores what was kept', async (t) => {
  const dir = await tempDir();
  try {
    const live = join(dir, 'live');
    const now = Date.parse('2026-11-01T00:00:00.000Z');
    const pad = 'x'.repeat(1000);
    // 4,000 tasks of about 1 KB past the retention and 500 inside it, then a sweep.
    await withStore(
      live,
      async (app) => {
        for (let batch = 0; batch < 9; batch += 1) {
          await app.store.write(async () => {
            for (let i = 0; i < 500; i += 1) {
              const old = batch < 8;
              const at = new Date(now - (old ? 100 : 1) * 86_400_000).toISOString();
              await app.store.tables.tasks.put(['ws_a', `task_${old ? 'old' : 'new'}_${batch}_${i}_${pad}`], at);
            }
          });
        }
        let removed = 0;
        for (let run = 0; run < 10 && removed < 4000; run += 1) removed += (await app.services.sweeper.run()).removed;
        t.is(removed, 4000);
      },
      { clock: fixedClock(now) },
    );
    const liveSize = (await stat(join(live, 'svc.mdb'))).size;
    t.true(liveSize > 4_000_000, `the live file keeps its pages (${liveSize} bytes)`);

    const out = join(dir, 'copy.mdb');
    const backup = await svc(['backup', '--data-dir', live, '--out', out, '--json']);
    t.is(backup.code, 0, backup.stderr);
    const copySize = (await stat(out)).size;
    t.true(copySize < liveSize / 4, `the copy is compacted (${copySize} of ${liveSize} bytes)`);

    // Restoring: the copy as svc.mdb in an empty data dir, beside the same master.key.
    const restored = join(dir, 'restored');
    await mkdir(restored);
    await copyFile(out, join(restored, 'svc.mdb'));
    await copyFile(join(live, 'master.key'), join(restored, 'master.key'));
    const kept = await withStore(restored, async (app) =>
      (await app.store.tables.tasks.scan(['ws_a'])).map((e) => e.key[1]),
    );
    t.is(kept.length, 500);
    t.true(kept.every((k) => String(k).startsWith('task_new_')));
  } finally {
    await removeDir(dir);
  }
});
