import test from 'ava';
import { expectStatus, type Person } from '../helpers/console.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { addPerson, agentView, makeBot, pendingPayment, reviewRule, SERVER_ENV, staff } from './support.js';

/**
 * Who may decide an approval, judged when they decide, not when the action was asked:
 * - a two-person rule (`count: 2`) counts only approvals whose authors may still decide: a person
 *   removed from the workspace, or demoted to analyst, since they approved leaves no half of the
 *   decision behind;
 * - separation of duties ("the person the agent acts for may not approve its action") holds for
 *   the person the agent acted for when the action was asked: re-pointing the agent (PATCH actsFor)
 *   does not let them approve their own agent's payment.
 */

let server: ServedInProcess;
let owner: Person;
let admin: Person;

test.before(async () => {
  server = await serveInProcess({ env: SERVER_ENV });
  ({ owner, admin } = await staff(server));
});

test.after.always(() => stopAndClean(server));

const approve = (who: Person, id: string) => who.send('POST', `/approvals/${id}/approve`, {});

test.serial('the approval of a person removed meanwhile does not count as the second person', async (t) => {
  const leaver = await addPerson(server, owner.wid, 'leaver@example.com', 'admin');
  const bot = await makeBot(owner, 'two-person-bot-a', [reviewRule({ count: 2 })]);
  const action = await pendingPayment(t, server, bot);

  const first = await approve(leaver, action.approvalId);
  t.is(first.status, 409, first.text);
  expectStatus(await owner.send('DELETE', `/members/${leaver.id}`), 200, 'remove member');

  const second = await approve(owner, action.approvalId);
  t.is(second.status, 409, `decided with a removed person's approval: ${second.status} ${second.text}`);
  t.is(second.body?.error?.type, 'second_person_required');
  const view = await agentView(server, bot, action.id);
  t.not(view.body.decision, 'allow');
});

test.serial('the approval of a person demoted to analyst meanwhile does not count as the second person', async (t) => {
  const demoted = await addPerson(server, owner.wid, 'demoted@example.com', 'admin');
  const bot = await makeBot(owner, 'two-person-bot-b', [reviewRule({ count: 2 })]);
  const action = await pendingPayment(t, server, bot);

  const first = await approve(demoted, action.approvalId);
  t.is(first.status, 409, first.text);
  expectStatus(await owner.send('PATCH', `/members/${demoted.id}`, { role: 'analyst' }), 200, 'demote member');

  const second = await approve(owner, action.approvalId);
  t.is(second.status, 409, `decided with a demoted person's approval: ${second.status} ${second.text}`);
  const view = await agentView(server, bot, action.id);
  t.not(view.body.decision, 'allow');
});

test.serial(
  're-pointing the agent does not let the person it acted for approve under separation of duties',
  async (t) => {
    const bot = await makeBot(admin, 'admins-own-bot', [reviewRule({ separationOfDuties: true })], admin.id);
    const action = await pendingPayment(t, server, bot);

    const direct = await approve(admin, action.approvalId);
    t.is(direct.status, 403, direct.text);
    t.is(direct.body?.error?.type, 'separation_of_duties');

    // The admin the agent acts for makes it act for nobody, then approves.
    expectStatus(await admin.send('PATCH', `/agents/${bot.agentId}`, { actsFor: null }), 200, 'patch actsFor');
    const after = await approve(admin, action.approvalId);
    t.is(after.status, 403, `approved by the person the agent acted for: ${after.status} ${after.text}`);
    t.is(after.body?.error?.type, 'separation_of_duties');

    const view = await agentView(server, bot, action.id);
    t.not(view.body.decision, 'allow', 'the payment was allowed with a receipt');
  },
);
