import test from 'ava';
import { expectStatus, type Person } from '../helpers/console.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { agentView, makeBot, pendingPayment, reviewRule, SERVER_ENV, staff } from './support.js';

/**
 * Review 2: separation of duties (issue 4): "the person the agent acts for may not
 * approve its action". approvals/service.ts checks the agent's *current* actsFor at approval time
 * (service.ts:161), and the approval record keeps no copy of who the agent acted for when the
 * action was asked. An admin (or owner) the agent acts for re-points the agent (PATCH actsFor to
 * null or to someone else), approves their own agent's payment, and may point it back afterwards.
 */

let server: ServedInProcess;
let admin: Person;

test.before(async () => {
  server = await serveInProcess({ env: SERVER_ENV });
  ({ admin } = await staff(server));
});

test.after.always(() => stopAndClean(server));

test('re-pointing the agent does not let the person it acted for approve under separation of duties', async (t) => {
  const bot = await makeBot(admin, 'admins-own-bot', [reviewRule({ separationOfDuties: true })], admin.id);
  const action = await pendingPayment(t, server, bot);

  const direct = await admin.send('POST', `/approvals/${action.approvalId}/approve`, {});
  t.is(direct.status, 403, direct.text);
  t.is(direct.body?.error?.type, 'separation_of_duties');

  // The admin the agent acts for makes it act for nobody, then approves.
  expectStatus(await admin.send('PATCH', `/agents/${bot.agentId}`, { actsFor: null }), 200, 'patch actsFor');
  const after = await admin.send('POST', `/approvals/${action.approvalId}/approve`, {});
  t.is(after.status, 403, `approved by the person the agent acted for: ${after.status} ${after.text}`);
  t.is(after.body?.error?.type, 'separation_of_duties');

  const view = await agentView(server, bot, action.id);
  t.not(view.body.decision, 'allow', 'the payment was allowed with a receipt');
});
