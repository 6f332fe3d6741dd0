import test from 'ava';
import { authorize, createAgent, payment } from '../helpers/gate.js';
import { bearer, call } from '../helpers/http.js';
import { startServer, stopAndClean, svc, type RunningServer } from '../helpers/process.js';

/**
 * Crash safety of the gate: an allow the client received was flushed with its ledger record
 * before the answer left. A server killed with SIGKILL in the middle of load loses none of them,
 * and the ledger it leaves verifies.
 */
let restarted: RunningServer | undefined;

test.after.always(async () => {
  await stopAndClean(restarted);
});

test('after SIGKILL mid-load, every allow the client received exists and the ledger verifies', async (t) => {
  const server = await startServer({ env: { SVC_GATE_RATE_PER_MINUTE: '1000000' } });
  const agent = await createAgent(server, [
    { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 },
  ]);
  const received: string[] = [];
  let running = true;
  // Eight clients authorizing in a loop until the server dies under them.
  const clients = Array.from({ length: 8 }, async () => {
    while (running) {
      try {
        const res = await authorize(server, agent.key, payment(100));
        if (res.status === 200 && res.body.decision === 'allow') received.push(res.body.id);
      } catch {
        return; // the connection died with the server
      }
    }
  });
  while (received.length < 150) await new Promise((r) => setImmediate(r));
  server.proc.kill('SIGKILL');
  running = false;
  await Promise.all(clients);
  t.is(await server.stop(), null, 'the server was killed, not stopped');
  t.true(received.length >= 150);

  restarted = await startServer({ dataDir: server.dataDir });
  for (const id of received) {
    const res = await call(restarted.url, 'GET', `/v1/actions/${id}`, { headers: bearer(agent.key) });
    t.is(res.status, 200, `action ${id} whose allow was received must exist`);
    t.is(res.body.decision, 'allow');
  }
  await restarted.stop();
  const verified = await svc(['ledger', 'verify', '--data-dir', server.dataDir, '--json']);
  t.is(verified.code, 0, verified.stdout + verified.stderr);
  const doc = JSON.parse(verified.stdout);
  t.true(doc.ok);
  t.true(doc.ledgers[0].size >= received.length + 3, 'agent, mandate and key records, then one per decision');
});
