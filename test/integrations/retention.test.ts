import test from 'ava';
import { removeDir, tempDir } from '../helpers/process.js';
import { withStore } from '../helpers/store.js';

/**
 * What the inbound and outbound integrations keep does not grow without end: identifiers past
 * their window, answers to inbound events after 30 days, and finished deliveries after 30 days
 * are swept; what is still needed (a fresh answer, a pending delivery) stays.
 */
const DAY = 86_400_000;

test('the sweeps remove old answers, used identifiers and finished deliveries, and keep what is still needed', async (t) => {
  const dir = await tempDir();
  try {
    const now = Date.now();
    const iso = (ms: number) => new Date(ms).toISOString();
    await withStore(dir, async (app) => {
      const tables = app.store.tables;
      await app.store.write(() => {
        tables.hookEvents.put(['ws_a', 'issuer', 'evt_old'], { answer: { received: true }, at: iso(now - 31 * DAY) });
        tables.hookEvents.put(['ws_a', 'issuer', 'evt_new'], { answer: { received: true }, at: iso(now - DAY) });
        tables.hookOnce.put(['slack', 'sig-old'], now - 1000);
        tables.hookOnce.put(['slack', 'sig-live'], now + 60_000);
        const delivery = (id: string, status: 'pending' | 'delivered' | 'failed', age: number) => ({
          id,
          workspaceId: 'ws_a',
          endpointId: 'whk_a',
          eventId: `evr_${id}`,
          eventType: 'action.decided',
          body: '{}',
          createdAt: iso(now - age),
          status,
          attempts: [],
          nextAttemptAt: status === 'pending' ? iso(now) : null,
        });
        tables.deliveries.put(['ws_a', 'whk_a', 'dlv_old_done'], delivery('dlv_old_done', 'delivered', 31 * DAY));
        tables.deliveries.put(['ws_a', 'whk_a', 'dlv_old_failed'], delivery('dlv_old_failed', 'failed', 40 * DAY));
        tables.deliveries.put(['ws_a', 'whk_a', 'dlv_old_pending'], delivery('dlv_old_pending', 'pending', 31 * DAY));
        tables.deliveries.put(['ws_a', 'whk_a', 'dlv_recent'], delivery('dlv_recent', 'delivered', DAY));
      });
      t.is(await app.services.once.sweep(), 2);
      t.deepEqual(
        tables.hookEvents.scan(['ws_a']).map((e) => e.key[2]),
        ['evt_new'],
      );
      t.deepEqual(
        tables.hookOnce.scan(['slack']).map((e) => e.key[1]),
        ['sig-live'],
      );
      t.is(await app.services.webhooks.sweepDeliveries(), 2);
      t.deepEqual(
        tables.deliveries
          .scan(['ws_a'])
          .map((e) => e.key[2])
          .sort(),
        ['dlv_old_pending', 'dlv_recent'],
      );
    });
  } finally {
    await removeDir(dir);
  }
});
