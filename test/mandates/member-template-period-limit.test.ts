import test from 'ava';
import { signIn } from '../helpers/http.js';
import { consoleClient, expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { authorize } from '../helpers/gate.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { withStore } from '../helpers/store.js';

/**
 * Review: members may give their agents only template rules ("cannot widen beyond templates").
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
