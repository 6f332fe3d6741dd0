import test from 'ava';
import { createApp } from '../../src/app.js';
import { createLogger } from '../../src/lib/log.js';
import { loadSettings } from '../../src/settings/load.js';
import { consoleClient } from '../helpers/console.js';
import { removeDir, stopAndClean, tempDir } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { authorize, payment, PAY_ACME } from '../helpers/gate.js';
import { withStore } from '../helpers/store.js';
import { assertDenied, getAction, makeAgent, type Agent } from './support.js';

/**
 * Kill switch at the gate: a stopped agent's action requests get 200 with
 * a deny decision carrying signal agent_frozen, and a freeze written by another process (here:
 * the test process opening the same store, as `svc freeze --local` does) applies to the very
 * next request. Serial: each test opens the server's LMDB store from this process.
 */

let server: ServedInProcess;

test.before(async () => {
  server = await serveInProcess();
});

test.after.always(() => stopAndClean(server));

type Hold = { hold: string; reason: string; by: string; at: string };

/** Writes the agent's holds straight into the store, as a second process would. */
async function setHolds(fx: Agent, holds: Hold[]): Promise<void> {
  await withStore(server.dataDir, async (app) => {
    await app.store.write(async () => {
      const agent = await app.store.tables.agents.get([fx.wid, fx.agentId]);
      if (!agent) throw new Error('agent not in the store');
      await app.store.tables.agents.put([fx.wid, fx.agentId], { ...agent, holds });
    });
  });
}

const drill = (): Hold => ({ hold: 'owner', reason: 'drill', by: 'test', at: new Date().toISOString() });

test.serial(
  'a freeze written by another process denies the very next request: agent_frozen, with evidence',
  async (t) => {
    const fx = await makeAgent(server, [PAY_ACME], 'frozen-bot');
    const before = await authorize(server, fx.key, payment(1000));
    t.is(before.body.decision, 'allow', before.text);

    await setHolds(fx, [drill()]);

    const res = await authorize(server, fx.key, payment(1000));
    await assertDenied(t, server, fx, res, 'agent_frozen');
    t.regex(res.body.reason, /stopped/i);
    t.deepEqual((await getAction(server, fx.key, res.body.id)).body, res.body, 'the denial is stored as answered');

    const view = await consoleClient(server, fx.wid, fx.cookie).get(`/agents/${fx.agentId}`);
    t.is(view.status, 200, view.text);
    t.is(view.body.status, 'stopped');
    t.deepEqual(
      view.body.holds.map((h: Hold) => h.hold),
      ['owner'],
    );
  },
);

test.serial('a stopped agent is denied every kind of action, each with its own evidence record', async (t) => {
  const fx = await makeAgent(
    server,
    [PAY_ACME, { actions: ['deploy'], domains: ['api.example.com'] }, { actions: ['crm.update'] }],
    'frozen-all',
  );
  await setHolds(fx, [drill()]);
  const bodies = [
    payment(10),
    { type: 'deploy', summary: 'Deploy the API', target: { domain: 'api.example.com' } },
    { type: 'crm.update', summary: 'Update the Acme record' },
    payment(10, { idempotencyKey: 'fresh-key-after-freeze' }),
  ];
  const evidence = new Set<string>();
  for (const body of bodies) {
    const res = await authorize(server, fx.key, body);
    await assertDenied(t, server, fx, res, 'agent_frozen');
    evidence.add(res.body.evidenceRecord);
  }
  t.is(evidence.size, bodies.length);
});

test.serial('an action decided before the freeze replays unchanged with its idempotency key', async (t) => {
  const fx = await makeAgent(server, [PAY_ACME], 'frozen-replay');
  const body = payment(500, { idempotencyKey: 'decided-before' });
  const first = await authorize(server, fx.key, body);
  t.is(first.body.decision, 'allow', first.text);
  await setHolds(fx, [drill()]);
  const replay = await authorize(server, fx.key, body);
  t.deepEqual(replay.body, first.body, 'never a second decision for one key');
  const fresh = await authorize(server, fx.key, payment(500));
  await assertDenied(t, server, fx, fresh, 'agent_frozen');
});

test.serial('the freeze of one agent leaves another running', async (t) => {
  const [frozen, running] = await Promise.all([
    makeAgent(server, [PAY_ACME], 'frozen-one'),
    makeAgent(server, [PAY_ACME], 'running-one'),
  ]);
  await setHolds(frozen, [drill()]);
  await assertDenied(t, server, frozen, await authorize(server, frozen.key, payment(100)), 'agent_frozen');
  const res = await authorize(server, running.key, payment(100));
  t.is(res.body.decision, 'allow', res.text);
});

test.serial('lifting the hold in the store lets the very next request through again', async (t) => {
  const fx = await makeAgent(server, [PAY_ACME], 'thawed-bot');
  await setHolds(fx, [drill(), { ...drill(), hold: 'token' }]);
  await assertDenied(t, server, fx, await authorize(server, fx.key, payment(100)), 'agent_frozen');
  await setHolds(fx, []);
  const res = await authorize(server, fx.key, payment(100));
  t.is(res.body.decision, 'allow', res.text);
  t.is(res.body.status, 'allowed');
  t.is(typeof res.body.receipt, 'string');
});

test.serial('concurrent requests right after a freeze are all denied', async (t) => {
  const fx = await makeAgent(server, [PAY_ACME], 'frozen-burst');
  await setHolds(fx, [drill()]);
  const answers = await Promise.all(Array.from({ length: 10 }, () => authorize(server, fx.key, payment(100))));
  for (const res of answers) {
    t.is(res.status, 200, res.text);
    t.is(res.body.decision, 'deny');
    t.deepEqual(res.body.signals, ['agent_frozen']);
  }
});

/*
 * The gate re-reads the agent inside its write transaction so that a change written
 * meanwhile (by another request or the CLI) applies; `stopped()` in src/gate/service.ts treats a
 * missing agent or one with holds as stopped, but not a removed one (removedAt set, holds []).
 * A request authenticated just before the agent was removed (the window spans the presign on the
 * thread pool and the wait for the write lock) is then decided, and allowed, after removal.
 * The service is called directly to make that window deterministic.
 */

test('an agent removed before the decision transaction is not allowed to pay', async (t) => {
  const dir = await tempDir();
  const app = await createApp(loadSettings({ env: {}, overrides: { dataDir: dir } }), {
    migrate: true,
    log: createLogger('silent'),
  });
  try {
    const s = app.services;
    await s.signingKeys.ensure();
    const { workspaceId: wid } = await s.people.createWorkspace({
      name: 'W',
      ownerEmail: 'o@example.com',
      ownerPassword: 'owner-password-1',
    });
    const who = { actor: 'user:owner', role: 'owner' as const };
    const agent = await s.agents.create({ workspaceId: wid, name: 'bot' }, who);
    await s.mandates.put(
      wid,
      agent.id,
      {
        rules: [{ actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 }],
        confirmBroaden: false,
      },
      who,
    );
    // Authenticated (the key resolved to a live agent) ... then the owner removes the agent.
    await s.agents.remove(wid, agent.id, who);
    const { action } = await s.gate.authorize(
      { workspaceId: wid, agentId: agent.id },
      { type: 'payment', summary: 'Pay', payment: { amount: 100, currency: 'EUR', merchant: 'acme.example' } },
    );
    t.not(action.decision, 'allow', `decided ${action.decision} with receipt ${action.receipt ? 'issued' : 'none'}`);
  } finally {
    await app.close();
    await removeDir(dir);
  }
});
