import test from 'ava';
import { authorize, createAgent, payment } from '../helpers/gate.js';
import { assertError } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess } from '../helpers/in-process.js';
import { withStore } from '../helpers/store.js';

/**
 * The gate fails closed (issue 3): when the ledger record cannot be written, the request fails
 * and nothing of the decision is kept: no action, no period usage, no receipt. Never an allow
 * without its record.
 */
test.serial(
  'a ledger that cannot be appended to: 500 internal, and no action, usage or idempotency record is kept',
  async (t) => {
    const server = await serveInProcess();
    try {
      const agent = await createAgent(server);
      t.is((await authorize(server, agent.key, payment(100))).body.decision, 'allow');
      const count = async (app: Parameters<Parameters<typeof withStore>[1]>[0]) => {
        const [actions, usage, idempotency] = await Promise.all([
          app.store.tables.actions.scan([agent.wid]),
          app.store.tables.periodUsage.scan([agent.wid, agent.agentId]),
          app.store.tables.idempotency.scan([agent.wid, agent.agentId]),
        ]);
        return { actions: actions.length, usage: usage.map((e) => e.value), idempotency: idempotency.length };
      };
      const before = await withStore(server.dataDir, async (app) => {
        // Break the record's write: an append writes the record and, in the same write, its
        // subscribers' deliveries; a webhook endpoint stored without its list of events makes
        // the outbox's part of that write fail, so the record cannot be written.
        const snapshot = await count(app);
        await app.store.write(async () => {
          await app.store.tables.webhookEndpoints.put([agent.wid, 'whk_broken'], {
            id: 'whk_broken',
            workspaceId: agent.wid,
            disabledAt: null,
            events: null,
          } as never);
        });
        return snapshot;
      });

      const res = await authorize(server, agent.key, payment(200, { idempotencyKey: 'after-break' }));
      assertError(t, res, 500, 'internal');
      t.is(res.body.error.receipt, undefined);
      t.false(res.text.includes('"decision"'), 'no decision left the server');

      const after = await withStore(server.dataDir, count);
      t.deepEqual(after, before, 'nothing of the failed decision was kept');
    } finally {
      await stopAndClean(server);
    }
  },
);
