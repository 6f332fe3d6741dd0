import test from 'ava';
import { expectStatus, type Person } from '../helpers/console.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { addPerson, agentView, makeBot, pendingPayment, reviewRule, SERVER_ENV } from './support.js';
import { ownerConsole } from '../helpers/console.js';

/**
 * Review 2: a two-person rule (`count: 2`) counts approvals recorded earlier without asking
 * whether their authors may still decide (approvals/service.ts:164-182). A person removed from
 * the workspace (or demoted to analyst) keeps "their" half of the decision: one remaining
 * person completes it, and the payment is allowed with a receipt although only one person who
 * may decide approved it.
 */

let server: ServedInProcess;
let owner: Person;

test.before(async () => {
  server = await serveInProcess({ env: SERVER_ENV });
  owner = await ownerConsole(server);
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
