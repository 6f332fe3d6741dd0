import test from 'ava';
import { until } from '../helpers/receiver.js';
import { startServer, stopAndClean } from '../helpers/process.js';
import { withStore } from '../helpers/store.js';

/**
 * `svc serve` runs the sweeper in the background: records past their window, written while it
 * runs (here by another process on the same store), are gone within a few of its runs, and
 * records inside their window stay; the log says what was swept.
 */
test('the running server sweeps records past their window in the background and keeps the rest', async (t) => {
  const server = await startServer({ env: { SVC_RETENTION_SWEEP_INTERVAL_MS: '1000' } });
  try {
    const now = Date.now();
    const iso = (ms: number) => new Date(ms).toISOString();
    // The test reads and writes the server's store from this process (LMDB is multi-process).
    await withStore(server.dataDir, async (app) => {
      const t_ = app.store.tables;
      await app.store.write(async () => {
        await t_.idempotency.put(['ws_a', 'agt_a', 'old'], {
          actionId: 'act_1',
          fingerprint: 'f',
          expiresAt: iso(now - 3_600_000),
        });
        await t_.idempotency.put(['ws_a', 'agt_a', 'live'], {
          actionId: 'act_2',
          fingerprint: 'f',
          expiresAt: iso(now + 3_600_000),
        });
        await t_.hookOnce.put(['slack', 'old'], now - 3_600_000);
        await t_.hookOnce.put(['slack', 'live'], now + 3_600_000);
        await t_.hookEvents.put(['ws_a', 'issuer', 'old'], {
          answer: { received: true },
          at: iso(now - 120 * 86_400_000),
        });
        await t_.hookEvents.put(['ws_a', 'issuer', 'live'], { answer: { received: true }, at: iso(now - 86_400_000) });
      });
      const keys = async () => [
        ...(await t_.idempotency.scan(['ws_a'])).map((e) => `idempotency/${e.key[2]}`),
        ...(await t_.hookOnce.scan(['slack'])).map((e) => `hookOnce/${e.key[1]}`),
        ...(await t_.hookEvents.scan(['ws_a'])).map((e) => `hookEvents/${e.key[2]}`),
      ];
      t.is((await keys()).length, 6);
      await until('the sweep', async () => (await keys()).length === 3, 15_000);
      t.deepEqual(await keys(), ['idempotency/live', 'hookOnce/live', 'hookEvents/live']);
    });
    await until('the log line', () => server.stderr().includes('swept records past their window'), 5_000);
    const line = server
      .stderr()
      .split('\n')
      .find((l) => l.includes('swept records past their window'))!;
    t.deepEqual(JSON.parse(line).removed, { idempotency: 1, hookOnce: 1, hookEvents: 1 });
  } finally {
    await stopAndClean(server);
  }
});
