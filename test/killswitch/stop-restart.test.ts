import test, { type ExecutionContext } from 'ava';
import type { Person } from '../helpers/console.js';
import { authorize } from '../helpers/gate.js';
import { assertError } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { about, makeBot, pay, SERVER_ENV, staff, type Bot } from '../approvals/support.js';

/**
 * The kill switch for one agent in the console (the agent rows): stop writes the
 * hold `owner` and the very next authorize is a deny with `agent_frozen`; restart is for the
 * person the agent acts for, an owner or an admin (an auditor, who sees every agent: 403
 * forbidden naming who may; a member or analyst it does not act for does not see it: 404).
 * Each change is a ledger record naming the person. Each test makes its own agents.
 */

let server: ServedInProcess;
let owner: Person;
let admin: Person;
let member: Person;
let otherMember: Person;
let analyst: Person;
let auditor: Person;

test.before(async () => {
  server = await serveInProcess({ env: SERVER_ENV });
  ({ owner, admin, member, otherMember, analyst, auditor } = await staff(server));
});

test.after.always(() => stopAndClean(server));

const PAY = [{ actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 }];

async function assertFrozen(t: ExecutionContext, bot: Bot): Promise<void> {
  const res = await authorize(server, bot.key, pay(100, 'while stopped'));
  t.is(res.status, 200, res.text);
  t.is(res.body.decision, 'deny');
  t.is(res.body.status, 'denied');
  t.deepEqual(res.body.signals, ['agent_frozen']);
  t.is(res.body.receipt, null);
  t.regex(res.body.evidenceRecord, /^evr_/);
}

async function assertRuns(t: ExecutionContext, bot: Bot): Promise<void> {
  const res = await authorize(server, bot.key, pay(100, 'running'));
  t.is(res.status, 200, res.text);
  t.is(res.body.decision, 'allow');
  t.is(res.body.status, 'allowed');
}

test('stop: the agent is stopped with hold owner by the person, its next authorize is deny agent_frozen; an owner restarts it and it is allowed again', async (t) => {
  const bot = await makeBot(owner, 'stop-bot', PAY);
  await assertRuns(t, bot);

  const stopped = await owner.send('POST', `/agents/${bot.agentId}/stop`, { reason: 'runaway spend' });
  t.is(stopped.status, 200, stopped.text);
  t.is(stopped.body.id, bot.agentId);
  t.is(stopped.body.status, 'stopped');
  t.is(stopped.body.holds.length, 1);
  t.like(stopped.body.holds[0], { hold: 'owner', reason: 'runaway spend', by: `user:${owner.id}` });
  t.is(typeof stopped.body.holds[0].at, 'string');
  t.like((await owner.get(`/agents/${bot.agentId}`)).body, {
    status: 'stopped',
    holds: [{ hold: 'owner', by: `user:${owner.id}` }],
  });

  await assertFrozen(t, bot);

  const restarted = await owner.send('POST', `/agents/${bot.agentId}/restart`);
  t.is(restarted.status, 200, restarted.text);
  t.is(restarted.body.status, 'running');
  t.deepEqual(restarted.body.holds, []);
  t.like((await owner.get(`/agents/${bot.agentId}`)).body, { status: 'running', holds: [] });
  await assertRuns(t, bot);

  const records = (await about(owner, bot.agentId)).filter(
    (r) => r.kind.startsWith('agent.') && r.kind !== 'agent.created',
  );
  t.deepEqual(
    records.map((r) => [r.kind, r.actor]),
    [
      ['agent.stopped', `user:${owner.id}`],
      ['agent.restarted', `user:${owner.id}`],
    ],
  );
  t.like(records[0]?.data, { hold: 'owner', reason: 'runaway spend' });
});

test('restart: an auditor gets 403 forbidden naming who may, a member or analyst it does not act for 404; the member it acts for restarts it', async (t) => {
  const bot = await makeBot(owner, 'members-stopped-bot', PAY, member.id);
  t.is((await owner.send('POST', `/agents/${bot.agentId}/stop`, { reason: 'check' })).status, 200);

  const refused = await auditor.send('POST', `/agents/${bot.agentId}/restart`);
  assertError(t, refused, 403, 'forbidden');
  const message: string = refused.body.error.message;
  t.true(message.includes(member.id), `names the person the agent acts for: ${message}`);
  t.regex(message, /owner/);
  t.regex(message, /admin/);
  for (const who of [otherMember, analyst]) {
    const unseen = await who.send('POST', `/agents/${bot.agentId}/restart`);
    assertError(t, unseen, 404, 'not_found');
    t.false(unseen.text.includes(member.id), 'nothing says whom it acts for');
  }
  t.is((await owner.get(`/agents/${bot.agentId}`)).body.status, 'stopped');
  await assertFrozen(t, bot);

  const res = await member.send('POST', `/agents/${bot.agentId}/restart`);
  t.is(res.status, 200, res.text);
  t.is(res.body.status, 'running');
  await assertRuns(t, bot);
  const restarted = (await about(owner, bot.agentId)).filter((r) => r.kind === 'agent.restarted');
  t.deepEqual(
    restarted.map((r) => r.actor),
    [`user:${member.id}`],
  );
  t.false(
    (await about(owner, bot.agentId)).some((r) => r.kind === 'agent.restarted' && r.actor !== `user:${member.id}`),
    'refused restarts are not recorded',
  );
});

test('restart: an admin restarts an agent acting for someone else', async (t) => {
  const bot = await makeBot(owner, 'admin-restart-bot', PAY, member.id);
  t.is((await member.send('POST', `/agents/${bot.agentId}/stop`, { reason: 'mine to stop' })).status, 200);
  const stoppedBy = (await owner.get(`/agents/${bot.agentId}`)).body.holds[0];
  t.like(stoppedBy, { hold: 'owner', by: `user:${member.id}` });
  await assertFrozen(t, bot);
  const res = await admin.send('POST', `/agents/${bot.agentId}/restart`);
  t.is(res.status, 200, res.text);
  t.is(res.body.status, 'running');
  await assertRuns(t, bot);
});

test('restart with a reason: the reason is recorded with the restart in the ledger; an overlong one is 400', async (t) => {
  const bot = await makeBot(owner, 'reasoned-restart-bot', PAY);
  t.is((await owner.send('POST', `/agents/${bot.agentId}/stop`, { reason: 'checking a refund' })).status, 200);
  const tooLong = await owner.send('POST', `/agents/${bot.agentId}/restart`, { reason: 'x'.repeat(501) });
  assertError(t, tooLong, 400, 'invalid_request');
  t.is((await owner.get(`/agents/${bot.agentId}`)).body.status, 'stopped', 'a refused restart lifts nothing');
  const res = await owner.send('POST', `/agents/${bot.agentId}/restart`, { reason: '  refund checked, all fine  ' });
  t.is(res.status, 200, res.text);
  t.is(res.body.status, 'running');
  await assertRuns(t, bot);
  const restarted = (await about(owner, bot.agentId)).filter((r) => r.kind === 'agent.restarted');
  t.deepEqual(
    restarted.map((r) => r.data),
    [{ lifted: ['owner'], reason: 'refund checked, all fine' }],
  );
});

test('stop: a member may not stop an agent that does not act for them (404: not theirs to see), nor an analyst any (403)', async (t) => {
  const bot = await makeBot(owner, 'not-theirs-bot', PAY, otherMember.id);
  assertError(t, await member.send('POST', `/agents/${bot.agentId}/stop`, { reason: 'mischief' }), 404, 'not_found');
  assertError(t, await analyst.send('POST', `/agents/${bot.agentId}/stop`, { reason: 'mischief' }), 403, 'forbidden');
  t.is((await owner.get(`/agents/${bot.agentId}`)).body.status, 'running');
  await assertRuns(t, bot);
  t.false((await about(owner, bot.agentId)).some((r) => r.kind === 'agent.stopped'));
});

test('stop without a reason is 400 invalid_request naming reason, and nothing stops', async (t) => {
  const bot = await makeBot(owner, 'no-reason-bot', PAY);
  for (const body of [{}, { reason: '' }, { reason: '   ' }]) {
    const res = await owner.send('POST', `/agents/${bot.agentId}/stop`, body);
    assertError(t, res, 400, 'invalid_request');
    t.true(
      res.body.error.errors?.some((e: { field: string }) => e.field === 'reason'),
      res.text,
    );
  }
  const noBody = await owner.send('POST', `/agents/${bot.agentId}/stop`);
  assertError(t, noBody, 400, 'invalid_request');
  t.is((await owner.get(`/agents/${bot.agentId}`)).body.status, 'running');
  await assertRuns(t, bot);
});

test('stop and restart of an unknown agent: 404 not_found', async (t) => {
  const none = 'agt_0000000000000000000000';
  assertError(t, await owner.send('POST', `/agents/${none}/stop`, { reason: 'x' }), 404, 'not_found');
  assertError(t, await owner.send('POST', `/agents/${none}/restart`), 404, 'not_found');
});

test('stopping twice keeps one owner hold; one restart lifts it', async (t) => {
  const bot = await makeBot(owner, 'twice-bot', PAY);
  t.is((await owner.send('POST', `/agents/${bot.agentId}/stop`, { reason: 'first' })).status, 200);
  const again = await admin.send('POST', `/agents/${bot.agentId}/stop`, { reason: 'second' });
  t.is(again.status, 200, again.text);
  t.is(again.body.holds.length, 1);
  t.like(again.body.holds[0], { hold: 'owner', reason: 'second', by: `user:${admin.id}` });
  t.is((await owner.send('POST', `/agents/${bot.agentId}/restart`)).status, 200);
  await assertRuns(t, bot);
});
