import test from 'ava';
import { createApp } from '../../src/app.js';
import { createLogger } from '../../src/lib/log.js';
import { loadSettings } from '../../src/settings/load.js';
import { authorize } from '../helpers/gate.js';
import { consoleClient, expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { signIn } from '../helpers/http.js';
import { removeDir, stopAndClean, tempDir } from '../helpers/process.js';
import { withStore } from '../helpers/store.js';

/**
 * Period limits of mandates: what an agent may spend in a day or a week, whoever wrote its rules
 * and however they were changed since. A rule kept by its mnd_ id keeps its period usage, even
 * when its period changes; a member, who may give agents only template rules, cannot multiply or
 * reset a template's period limit by repeating or re-saving its rule.
 */

/*
 * README "A rule sent back with its mnd_ id keeps it, and so keeps its period usage".
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

/*
 * Members may give their agents only template rules ("cannot widen beyond templates").
 * A template's period limit must then bound what the member's agent can spend in a period.
 */

const TEMPLATE_RULE = {
  actions: ['payment'],
  merchants: ['acme.example'],
  currencies: ['EUR'],
  maxAmount: 5000,
  periodLimit: { amount: 5000, period: 'day' },
};

let server: ServedInProcess;
let owner: Person;
let member: Person;

test.before(async () => {
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '1000' } });
  owner = await ownerConsole(server);
  const user = await withStore(server.dataDir, (app) =>
    app.services.people.addMember({
      workspaceId: owner.wid,
      email: 'm@example.com',
      name: 'm',
      password: 'member-password-1',
      role: 'member',
    }),
  );
  member = {
    ...consoleClient(server, owner.wid, await signIn(server.url, 'm@example.com', 'member-password-1')),
    id: user.id,
  };
  expectStatus(
    await owner.send('POST', '/templates', { name: 'Pay Acme 50/day', rules: [TEMPLATE_RULE] }),
    201,
    'template',
  );
});

test.after.always(() => stopAndClean(server));

const pay = (amount: number) => ({
  type: 'payment',
  summary: 'Pay Acme',
  payment: { amount, currency: 'EUR', merchant: 'acme.example' },
});

async function memberAgent(name: string): Promise<{ id: string; key: string }> {
  const agent = expectStatus(await member.send('POST', '/agents', { name }), 201, 'agent').body;
  const key = expectStatus(await member.send('POST', `/agents/${agent.id}/keys`, {}), 201, 'key').body.key;
  return { id: agent.id, key };
}

test('a member cannot multiply a template period limit by repeating the template rule', async (t) => {
  const agent = await memberAgent('dup-bot');
  const put = await member.send('PUT', `/agents/${agent.id}/mandate`, {
    rules: [TEMPLATE_RULE, TEMPLATE_RULE, TEMPLATE_RULE, TEMPLATE_RULE],
  });
  let allowed = 0;
  if (put.status === 200) {
    for (let i = 0; i < 4; i += 1) {
      const res = await authorize(server, agent.key, pay(5000));
      if (res.body.decision === 'allow') allowed += res.body.payment.amount;
    }
  }
  t.true(
    allowed <= TEMPLATE_RULE.periodLimit.amount,
    `the member's agent was allowed ${allowed} EUR-cents in one day under a template limit of ${TEMPLATE_RULE.periodLimit.amount}`,
  );
});

test('a member cannot reset a template period limit by saving the same template rule again', async (t) => {
  const agent = await memberAgent('reset-bot');
  expectStatus(await member.send('PUT', `/agents/${agent.id}/mandate`, { rules: [TEMPLATE_RULE] }), 200, 'mandate');
  t.is((await authorize(server, agent.key, pay(5000))).body.decision, 'allow');
  t.is((await authorize(server, agent.key, pay(1))).body.decision, 'deny', 'the day limit is used up');
  let allowed = 5000;
  for (let i = 0; i < 3; i += 1) {
    // The same template rule, sent as the template lists it (as the console would send it).
    const again = await member.send('PUT', `/agents/${agent.id}/mandate`, { rules: [TEMPLATE_RULE] });
    if (again.status !== 200) break;
    const res = await authorize(server, agent.key, pay(5000));
    if (res.body.decision === 'allow') allowed += 5000;
  }
  t.true(
    allowed <= TEMPLATE_RULE.periodLimit.amount,
    `the member's agent was allowed ${allowed} in one day under a template limit of ${TEMPLATE_RULE.periodLimit.amount}`,
  );
});
