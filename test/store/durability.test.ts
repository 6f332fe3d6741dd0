import test from 'ava';
import { bearer, call } from '../helpers/http.js';
import { removeDir, startServer, svc, type RunningServer } from '../helpers/process.js';

/**
 * Acknowledged writes survive a crash: every key the server answered 201 for still works after
 * the process is killed with SIGKILL (no chance to flush) and started again on the same store.
 */

const servers: RunningServer[] = [];

test.after.always(async () => {
  for (const s of servers) await s.stop('SIGKILL');
  if (servers[0]) await removeDir(servers[0].dataDir);
});

test('50 concurrent POST /v1/admin/keys all answer 201, and every key works after SIGKILL and restart', async (t) => {
  const first = await startServer();
  servers.push(first);
  const local = await svc(['keys', 'create', '--scope', 'admin', '--local', '--data-dir', first.dataDir, '--json']);
  t.is(local.code, 0, local.stderr);
  const admin = JSON.parse(local.stdout).key as string;

  const minted = await Promise.all(
    Array.from({ length: 50 }, (_, i) =>
      call(first.url, 'POST', '/v1/admin/keys', {
        headers: bearer(admin),
        json: { scope: 'inference', name: `k${i}` },
      }),
    ),
  );
  for (const res of minted) t.is(res.status, 201, res.text);
  const keys = minted.map((r) => ({ id: r.body.id as string, key: r.body.key as string, name: r.body.name as string }));
  t.is(new Set(keys.map((k) => k.key)).size, 50);
  t.is(new Set(keys.map((k) => k.id)).size, 50);

  // The crash: no SIGTERM, no flush, no close.
  await first.stop('SIGKILL');
  t.is(first.proc.signalCode, 'SIGKILL');

  const second = await startServer({ dataDir: first.dataDir });
  servers.push(second);
  t.is(second.boot.owner, undefined, 'the restart found the store, not an empty one');
  const checks = await Promise.all(keys.map((k) => call(second.url, 'GET', '/v1/whoami', { headers: bearer(k.key) })));
  checks.forEach((res, i) => {
    t.is(res.status, 200, `${keys[i]!.name}: ${res.text}`);
    t.is(res.body.id, keys[i]!.id);
    t.is(res.body.name, keys[i]!.name);
  });
  const stillAdmin = await call(second.url, 'GET', '/v1/whoami', { headers: bearer(admin) });
  t.is(stillAdmin.status, 200);
});
