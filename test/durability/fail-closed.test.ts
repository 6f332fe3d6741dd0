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
      const count = (app: Parameters<Parameters<typeof withStore>[1]>[0]) => ({
        actions: app.store.tables.actions.scan([agent.wid]).length,
        usage: app.store.tables.periodUsage.scan([agent.wid, agent.agentId]).map((e) => e.value),
        idempotency: app.store.tables.idempotency.scan([agent.wid, agent.agentId]).length,
      });
      const before = await withStore(server.dataDir, (app) => {
        // Break the ledger: its head claims a last checkpoint that cannot exist, so the next append
        // (which must sign a checkpoint over it) cannot be written.
        const snapshot = count(app);
        return app.store.write(() => {
          const head = app.store.tables.ledgerHeads.get(agent.wid)!;
          app.store.tables.ledgerHeads.put(agent.wid, { ...head, checkpointSize: -1000 });
          return snapshot;
        });
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
