import test from 'ava';
import { createApp } from '../../src/app.js';
import { createLogger } from '../../src/lib/log.js';
import { loadSettings } from '../../src/settings/load.js';
import { removeDir, tempDir } from '../helpers/process.js';

/**
 * Review: README "A rule sent back with its mnd_ id keeps it, and so keeps its period usage".
 * When an owner keeps a rule (same id) but changes its period from day to week mid-week, the
 * week's limit must count what was already spent this week. Period usage is keyed by
 * [rule, currency, periodStart] without the period kind, so the week reads only the usage
 * stored under Monday's date (Monday's daily total) and the weekly limit is overrun.
 */

test('changing a kept rule from a daily to a weekly limit still counts the whole week', async (t) => {
  const dir = await tempDir();
  let now = Date.parse('2026-06-01T10:00:00Z'); // a Monday
  const clock = { now: () => now };
  const app = await createApp(loadSettings({ env: {}, overrides: { dataDir: dir } }), {
    migrate: true,
    log: createLogger('silent'),
    clock,
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
    const base = { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'] };
    const daily = await s.mandates.put(
      wid,
      agent.id,
      { rules: [{ ...base, periodLimit: { amount: 100, period: 'day' } }], confirmBroaden: false },
      who,
    );
    const ruleId = daily.rules[0]!.id;
    const caller = { workspaceId: wid, agentId: agent.id };
    const pay = () =>
      s.gate.authorize(caller, {
        type: 'payment',
        summary: 'Pay',
        payment: { amount: 100, currency: 'EUR', merchant: 'acme.example' },
      });

    let spent = 0;
    for (const day of ['2026-06-01', '2026-06-02', '2026-06-03']) {
      // Monday, Tuesday, Wednesday
      now = Date.parse(`${day}T10:00:00Z`);
      const { action } = await pay();
      t.is(action.decision, 'allow');
      spent += 100;
    }
    // Wednesday: the owner keeps the rule (same id) and makes the limit 300 a week.
    const weekly = await s.mandates.put(
      wid,
      agent.id,
      { rules: [{ ...base, id: ruleId, periodLimit: { amount: 300, period: 'week' } }], confirmBroaden: false },
      who,
    );
    t.is(weekly.rules[0]!.id, ruleId, 'the rule kept its id, and so (README) its usage');
    for (let i = 0; i < 3; i += 1) {
      const { action } = await pay();
      if (action.decision === 'allow') spent += 100;
    }
    t.true(spent <= 300, `allowed ${spent} EUR-cents this week under a weekly limit of 300`);
  } finally {
    await app.close();
    await removeDir(dir);
  }
});
