import test from 'ava';
import { CURRENT_SCHEMA_VERSION } from '../../src/store/index.js';
import { copyFile, mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { bearer, call } from '../helpers/http.js';
import { removeDir, svc, tempDir } from '../helpers/process.js';
import { serveInProcess } from '../helpers/in-process.js';

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
