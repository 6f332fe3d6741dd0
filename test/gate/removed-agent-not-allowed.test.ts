import test from 'ava';
import { createApp } from '../../src/app.js';
import { createLogger } from '../../src/lib/log.js';
import { loadSettings } from '../../src/settings/load.js';
import { removeDir, tempDir } from '../helpers/process.js';

/**
 * Review: the gate re-reads the agent inside its write transaction so that a change written
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
