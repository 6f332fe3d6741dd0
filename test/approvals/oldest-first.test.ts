import test from 'ava';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { manualClock } from '../helpers/clock.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { addPerson, makeBot, pendingPayment, reviewRule, SERVER_ENV, type Bot } from './support.js';

/**
 * Waiting approvals as a person reads them (issue 21: "approvals are listed in id order, without
 * the rule that asked for them"): GET /api/w/{wid}/approvals answers oldest first, page after page
 * (the cursor keeps that order), and each approval carries the action's reason and the rule that
 * asked for a person, as the agent's mandate holds it.
 */

const clock = manualClock();
let server: ServedInProcess;
let owner: Person;
let member: Person;
let bot: Bot;
let membersBot: Bot;
/** Approval ids in the order they were asked. */
const asked: string[] = [];

test.before(async () => {
  server = await serveInProcess({ env: SERVER_ENV, clock });
  owner = await ownerConsole(server);
  member = await addPerson(server, owner.wid, 'member@example.com', 'member');
  bot = await makeBot(owner, 'billing-bot', [reviewRule()]);
  membersBot = await makeBot(owner, 'members-bot', [reviewRule()], member.id);
});

test.after.always(() => stopAndClean(server));

test.serial('approvals are listed oldest first, across pages, whatever their ids', async (t) => {
  for (let i = 0; i < 7; i += 1) {
    clock.advance(60_000);
    const action = await pendingPayment(t, server, i === 3 || i === 5 ? membersBot : bot, 2100 + i, `n${i}`);
    asked.push(action.approvalId);
  }
  const listed = expectStatus(await owner.get('/approvals?status=pending&limit=200'), 200, 'approvals');
  t.deepEqual(
    listed.body.data.map((a: { id: string }) => a.id),
    asked,
  );
  t.is(listed.body.next, null);

  const paged: string[] = [];
  let cursor: string | null = null;
  do {
    const res = expectStatus(
      await owner.get(`/approvals?status=pending&limit=3${cursor ? `&cursor=${cursor}` : ''}`),
      200,
      'approvals page',
    );
    t.true(res.body.data.length <= 3);
    paged.push(...res.body.data.map((a: { id: string }) => a.id));
    cursor = res.body.next;
  } while (cursor);
  t.deepEqual(paged, asked, 'the cursor keeps the order');

  // A member reads only the approvals of agents that act for them, in the same order.
  const own = expectStatus(await member.get('/approvals?status=pending'), 200, 'member approvals');
  t.deepEqual(
    own.body.data.map((a: { id: string }) => a.id),
    [asked[3], asked[5]],
  );
});

test.serial('each approval names the rule that asked for a person and the reason', async (t) => {
  const mandate = expectStatus(await owner.get(`/agents/${bot.agentId}/mandate`), 200, 'mandate');
  const rule = mandate.body.rules[0];
  const listed = expectStatus(await owner.get('/approvals?status=pending&limit=1'), 200, 'approvals');
  const first = listed.body.data[0];
  t.is(first.id, asked[0]);
  t.is(first.action.ruleId, rule.id);
  t.deepEqual(first.rule, rule);
  t.is(first.action.reason, `Rule ${rule.id} asks a person to approve amounts above EUR 20.00.`);

  // The mandate changed since: the rule is gone, its id and the reason stay.
  expectStatus(
    await owner.send('PUT', `/agents/${bot.agentId}/mandate`, {
      rules: [reviewRule({ above: 4000 })],
    }),
    200,
    'mandate',
  );
  const after = expectStatus(await owner.get('/approvals?status=pending&limit=1'), 200, 'approvals').body.data[0];
  t.is(after.action.ruleId, rule.id);
  t.is(after.rule, null);
  t.regex(after.action.reason, new RegExp(rule.id));
});
