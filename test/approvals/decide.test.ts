import test from 'ava';
import type { Person } from '../helpers/console.js';
import { assertError, bearer, call, type Json } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import {
  about,
  agentView,
  APPROVAL_ID,
  EVIDENCE_ID,
  findApproval,
  makeBot,
  pendingPayment,
  reviewRule,
  SERVER_ENV,
  staff,
  verifiedClaims,
  type Bot,
  type PendingPayment,
} from './support.js';

/**
 * Human approvals through the real server and real sessions:
 * a `review` decision waits as an apr_ approval; signed-in people approve or deny it under the
 * rule's terms (who may decide, named approvers, separation of duties, two people, holds), a
 * fresh check against the mandate is made, and the agent's poll turns to allow (with a receipt
 * carrying `hum: true`) or deny. Every decision is a ledger record naming the person.
 * Each test makes its own agents, so tests run concurrently on one server.
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

const approve = (who: Person, aprId: string, note?: string) =>
  who.send('POST', `/approvals/${aprId}/approve`, note === undefined ? {} : { note });
const deny = (who: Person, aprId: string, note?: string) =>
  who.send('POST', `/approvals/${aprId}/deny`, note === undefined ? {} : { note });

/** The agent's view says the action still waits for a person. */
async function stillWaiting(t: import('ava').ExecutionContext, bot: Bot, action: PendingPayment): Promise<void> {
  const view = await agentView(server, bot, action.id);
  t.is(view.status, 200, view.text);
  t.is(view.body.decision, 'review');
  t.is(view.body.status, 'pending_approval');
  t.is(view.body.receipt, null);
}

/** The agent's view says the action is allowed, with a receipt signed for it carrying hum: true. */
async function allowedByPeople(t: import('ava').ExecutionContext, bot: Bot, action: PendingPayment): Promise<Json> {
  const view = await agentView(server, bot, action.id);
  t.is(view.status, 200, view.text);
  t.is(view.body.decision, 'allow');
  t.is(view.body.status, 'allowed');
  t.deepEqual(view.body.signals, []);
  t.is(view.body.approvalId, action.approvalId);
  t.is(typeof view.body.receipt, 'string');
  const claims = await verifiedClaims(server, view.body.receipt);
  t.like(claims, {
    sub: bot.agentId,
    act: action.id,
    typ: 'payment',
    amt: action.payment.amount,
    cur: 'EUR',
    mer: 'acme.example',
    hum: true,
    jti: action.id,
  });
  return view.body;
}

// Review, then approve

test('a payment above approval.above waits; an owner approves; the agent sees allow with a hum:true receipt, the ledger names the owner, and it settles', async (t) => {
  const bot = await makeBot(owner, 'approve-bot', [reviewRule()]);
  const action = await pendingPayment(t, server, bot, 3000, 'approve me');
  t.true(action.signals.includes('approval_required'));
  await stillWaiting(t, bot, action);

  // Listed as waiting, with what the action is.
  const listed = await findApproval(owner, action.approvalId, 'pending');
  t.truthy(listed, 'the pending list holds the approval');
  t.like(listed, {
    id: action.approvalId,
    actionId: action.id,
    agentId: bot.agentId,
    status: 'pending',
    approvals: [],
    requiredApprovals: 1,
    action: {
      type: 'payment',
      summary: 'Pay Acme 3000 EUR (approve me)',
      payment: { amount: 3000, currency: 'EUR', merchant: 'acme.example' },
    },
  });
  t.is(typeof listed.createdAt, 'string');

  const res = await approve(owner, action.approvalId, 'invoice checked');
  t.is(res.status, 200, res.text);
  t.is(res.body.id, action.approvalId);
  t.is(res.body.status, 'approved');
  t.is(res.body.approvals.length, 1);
  t.like(res.body.approvals[0], { by: owner.id, note: 'invoice checked' });
  t.is(typeof res.body.approvals[0].at, 'string');

  await allowedByPeople(t, bot, action);

  // No longer pending; listed as approved.
  t.is(await findApproval(owner, action.approvalId, 'pending'), undefined);
  t.like(await findApproval(owner, action.approvalId, 'approved'), { status: 'approved' });

  // The ledger: the person's approval and the allow that followed, both naming them.
  const onApproval = await about(owner, action.approvalId);
  const approved = onApproval.find((r) => r.kind === 'approval.approved');
  t.truthy(approved, JSON.stringify(onApproval));
  t.is(approved?.actor, `user:${owner.id}`);
  t.is(approved?.data.actionId, action.id);
  t.is(approved?.data.note, 'invoice checked');
  const onAction = await about(owner, action.id);
  const allowed = onAction.find((r) => r.kind === 'action.allowed');
  t.truthy(allowed, JSON.stringify(onAction));
  t.is(allowed?.actor, `user:${owner.id}`);
  t.is(allowed?.data.hum, true);

  // An approved action is allowed: the agent settles it.
  const settled = await call(server.url, 'POST', `/v1/actions/${action.id}/settle`, {
    headers: bearer(bot.key),
    json: { status: 'completed' },
  });
  t.is(settled.status, 200, settled.text);
  t.is(settled.body.status, 'settled');
  t.is(settled.body.settlement?.status, 'completed');
});

test('approving with no body (note omitted) works too', async (t) => {
  const bot = await makeBot(owner, 'no-note-bot', [reviewRule()]);
  const action = await pendingPayment(t, server, bot);
  const res = await owner.send('POST', `/approvals/${action.approvalId}/approve`);
  t.is(res.status, 200, res.text);
  t.is(res.body.status, 'approved');
  t.is(res.body.approvals[0].note, null);
  await allowedByPeople(t, bot, action);
});

// Deny

test('deny: the approval is denied, the action is deny approval_denied with evidence, and deciding again is 409 approval_closed', async (t) => {
  const bot = await makeBot(owner, 'deny-bot', [reviewRule()]);
  const action = await pendingPayment(t, server, bot);

  const res = await deny(owner, action.approvalId, 'not ours');
  t.is(res.status, 200, res.text);
  t.is(res.body.id, action.approvalId);
  t.is(res.body.status, 'denied');

  const view = await agentView(server, bot, action.id);
  t.is(view.body.decision, 'deny');
  t.is(view.body.status, 'denied');
  t.deepEqual(view.body.signals, ['approval_denied']);
  t.is(view.body.receipt, null);
  t.regex(view.body.evidenceRecord, EVIDENCE_ID);
  const evidence = (await owner.ledger()).find((r) => r.id === view.body.evidenceRecord);
  t.truthy(evidence, 'the evidenceRecord is a record of the ledger');
  t.is(evidence?.kind, 'approval.denied');
  t.is(evidence?.actor, `user:${owner.id}`);
  t.is(evidence?.subject, action.approvalId);

  for (const again of [
    await approve(owner, action.approvalId),
    await deny(owner, action.approvalId),
    await approve(admin, action.approvalId),
  ]) {
    assertError(t, again, 409, 'approval_closed');
  }
  t.deepEqual((await agentView(server, bot, action.id)).body, view.body, 'the action is unchanged');
  t.like(await findApproval(owner, action.approvalId), { status: 'denied' });

  // A denied action is not settled (not allowed → 409 not_allowed).
  const settle = await call(server.url, 'POST', `/v1/actions/${action.id}/settle`, {
    headers: bearer(bot.key),
    json: { status: 'completed' },
  });
  assertError(t, settle, 409, 'not_allowed');
});

test('an approval that is not in the workspace is 404 not_found', async (t) => {
  assertError(t, await approve(owner, 'apr_0000000000000000000000'), 404, 'not_found');
  assertError(t, await deny(owner, 'apr_0000000000000000000000'), 404, 'not_found');
});

// Separation of duties

test('separation of duties: the person the agent acts for may not approve (403), an owner then may; that person may still deny', async (t) => {
  const bot = await makeBot(owner, 'sod-bot', [reviewRule({ separationOfDuties: true })], member.id);
  const action = await pendingPayment(t, server, bot);

  const refused = await approve(member, action.approvalId, 'my own agent');
  assertError(t, refused, 403, 'separation_of_duties');
  t.like(await findApproval(owner, action.approvalId), { status: 'pending', approvals: [] });
  await stillWaiting(t, bot, action);
  t.false(
    (await about(owner, action.approvalId)).some((r) => r.kind === 'approval.approved'),
    'a refused approval writes no approval record',
  );

  const ok = await approve(owner, action.approvalId);
  t.is(ok.status, 200, ok.text);
  t.is(ok.body.status, 'approved');
  await allowedByPeople(t, bot, action);

  // Denying stays open to the person the agent acts for.
  const second = await pendingPayment(t, server, bot, 2500, 'second');
  const denied = await deny(member, second.approvalId, 'no');
  t.is(denied.status, 200, denied.text);
  t.is(denied.body.status, 'denied');
  const view = await agentView(server, bot, second.id);
  t.is(view.body.decision, 'deny');
  t.deepEqual(view.body.signals, ['approval_denied']);
  const record = (await owner.ledger()).find((r) => r.id === view.body.evidenceRecord);
  t.is(record?.actor, `user:${member.id}`);
});

test('without separation of duties, the member an agent acts for approves its action', async (t) => {
  const bot = await makeBot(owner, 'own-approve-bot', [reviewRule()], member.id);
  const action = await pendingPayment(t, server, bot);
  t.truthy(await findApproval(member, action.approvalId, 'pending'), 'the member sees it waiting');
  const res = await approve(member, action.approvalId);
  t.is(res.status, 200, res.text);
  t.is(res.body.status, 'approved');
  t.like(res.body.approvals[0], { by: member.id });
  await allowedByPeople(t, bot, action);
  const allowed = (await about(owner, action.id)).find((r) => r.kind === 'action.allowed');
  t.is(allowed?.actor, `user:${member.id}`);
});

// Two people

test('two-person rule: the first approval is recorded and answered 409 second_person_required; the same person again too; a second person approves', async (t) => {
  const bot = await makeBot(owner, 'two-person-bot', [reviewRule({ count: 2 })]);
  const action = await pendingPayment(t, server, bot);
  t.like(await findApproval(owner, action.approvalId), { requiredApprovals: 2, approvals: [] });

  const first = await approve(owner, action.approvalId, 'first');
  assertError(t, first, 409, 'second_person_required');
  const afterFirst = await findApproval(owner, action.approvalId, 'pending');
  t.truthy(afterFirst, 'still pending');
  t.is(afterFirst.approvals.length, 1);
  t.like(afterFirst.approvals[0], { by: owner.id, note: 'first' });
  await stillWaiting(t, bot, action);

  const again = await approve(owner, action.approvalId, 'again');
  assertError(t, again, 409, 'second_person_required');
  const afterAgain = await findApproval(owner, action.approvalId, 'pending');
  t.is(afterAgain?.approvals.length, 1, 'the same person counts once');
  await stillWaiting(t, bot, action);

  const second = await approve(admin, action.approvalId, 'second');
  t.is(second.status, 200, second.text);
  t.is(second.body.status, 'approved');
  t.deepEqual(
    second.body.approvals.map((a: { by: string }) => a.by),
    [owner.id, admin.id],
  );
  await allowedByPeople(t, bot, action);

  const records = (await about(owner, action.approvalId)).filter((r) => r.kind === 'approval.approved');
  t.deepEqual(
    records.map((r) => r.actor),
    [`user:${owner.id}`, `user:${admin.id}`],
  );
  assertError(t, await approve(member, action.approvalId), 409, 'approval_closed');
});

// Named approvers

test('named approvers: the owner is refused with 403 naming the approvers; the named admin approves', async (t) => {
  const bot = await makeBot(owner, 'named-bot', [reviewRule({ approvers: [admin.id] })]);
  const action = await pendingPayment(t, server, bot);
  t.like(await findApproval(owner, action.approvalId), { approvers: [admin.id] });

  const refused = await approve(owner, action.approvalId);
  assertError(t, refused, 403, 'forbidden');
  t.true(refused.body.error.message.includes(admin.id), refused.body.error.message);
  const refusedDeny = await deny(owner, action.approvalId);
  assertError(t, refusedDeny, 403, 'forbidden');
  t.true(refusedDeny.body.error.message.includes(admin.id), refusedDeny.body.error.message);
  t.like(await findApproval(owner, action.approvalId), { status: 'pending', approvals: [] });
  await stillWaiting(t, bot, action);

  const ok = await approve(admin, action.approvalId, 'named');
  t.is(ok.status, 200, ok.text);
  t.is(ok.body.status, 'approved');
  await allowedByPeople(t, bot, action);
});

// Who else may not decide

test('a member may not decide an approval of an agent that does not act for them; analysts and auditors may neither decide nor list', async (t) => {
  const bot = await makeBot(owner, 'not-yours-bot', [reviewRule()], otherMember.id);
  const action = await pendingPayment(t, server, bot);

  for (const res of [await approve(member, action.approvalId), await deny(member, action.approvalId)]) {
    assertError(t, res, 403, 'forbidden');
    t.is(res.body.status, undefined);
  }
  for (const who of [analyst, auditor]) {
    assertError(t, await approve(who, action.approvalId), 403, 'forbidden');
    assertError(t, await deny(who, action.approvalId), 403, 'forbidden');
    const list = await who.get('/approvals?status=pending');
    assertError(t, list, 403, 'forbidden');
    t.is(list.body.data, undefined);
  }
  t.like(await findApproval(owner, action.approvalId), { status: 'pending', approvals: [] });
  await stillWaiting(t, bot, action);
  t.deepEqual(
    (await about(owner, action.approvalId)).map((r) => r.kind),
    [],
    'no refused decision is recorded as a decision',
  );

  // The member it acts for may.
  const ok = await approve(otherMember, action.approvalId);
  t.is(ok.status, 200, ok.text);
});

// Fresh check against the mandate

test('fresh mandate check: two waiting payments fit the period limit alone, not together; the second approval ends denied with period_limit', async (t) => {
  const bot = await makeBot(owner, 'period-bot', [reviewRule({}, { periodLimit: { amount: 5000, period: 'day' } })]);
  const a = await pendingPayment(t, server, bot, 3000, 'first');
  const b = await pendingPayment(t, server, bot, 3000, 'second');

  const first = await approve(owner, a.approvalId);
  t.is(first.status, 200, first.text);
  t.is(first.body.status, 'approved');
  await allowedByPeople(t, bot, a);

  const second = await approve(owner, b.approvalId, 'also this one');
  t.is(second.status, 200, second.text);
  t.is(second.body.id, b.approvalId);
  t.is(second.body.status, 'denied');
  t.is(typeof second.body.reason, 'string');
  t.like(await findApproval(owner, b.approvalId), { status: 'denied' });

  const view = await agentView(server, bot, b.id);
  t.is(view.body.decision, 'deny');
  t.is(view.body.status, 'denied');
  t.deepEqual(view.body.signals, ['period_limit']);
  t.is(view.body.receipt, null);
  t.regex(view.body.evidenceRecord, EVIDENCE_ID);
  const evidence = (await owner.ledger()).find((r) => r.id === view.body.evidenceRecord);
  t.is(evidence?.kind, 'action.denied');
  t.is(evidence?.subject, b.id);
  t.deepEqual(evidence?.data.signals, ['period_limit']);
  // The person's approval is on the ledger too, by name.
  t.true(
    (await about(owner, b.approvalId)).some((r) => r.kind === 'approval.approved' && r.actor === `user:${owner.id}`),
  );
  assertError(t, await approve(admin, b.approvalId), 409, 'approval_closed');
});

test('a mandate narrowed while the action waited: the approval ends denied with the signal the fresh check names', async (t) => {
  const bot = await makeBot(owner, 'narrowed-bot', [reviewRule()]);
  const action = await pendingPayment(t, server, bot);
  const narrowed = await owner.send('PUT', `/agents/${bot.agentId}/mandate`, {
    rules: [reviewRule({}, { merchants: ['other.example'] })],
    confirmBroaden: true,
  });
  t.is(narrowed.status, 200, narrowed.text);

  const res = await approve(owner, action.approvalId);
  t.is(res.status, 200, res.text);
  t.is(res.body.status, 'denied');
  const view = await agentView(server, bot, action.id);
  t.is(view.body.decision, 'deny');
  t.deepEqual(view.body.signals, ['merchant_not_allowed']);
  t.is(view.body.receipt, null);
  t.regex(view.body.evidenceRecord, EVIDENCE_ID);
});

// Cross-site writes

test('a cross-site approve or deny (no x-svc-csrf, or another Origin) is 403 csrf and decides nothing', async (t) => {
  const bot = await makeBot(owner, 'csrf-bot', [reviewRule()]);
  const action = await pendingPayment(t, server, bot);
  for (const verb of ['approve', 'deny']) {
    const path = owner.api(`/approvals/${action.approvalId}/${verb}`);
    assertError(t, await call(server.url, 'POST', path, { headers: { cookie: owner.cookie }, json: {} }), 403, 'csrf');
    assertError(
      t,
      await call(server.url, 'POST', path, {
        headers: { cookie: owner.cookie, 'x-svc-csrf': '1', origin: 'https://evil.example' },
        json: {},
      }),
      403,
      'csrf',
    );
  }
  t.like(await findApproval(owner, action.approvalId), { status: 'pending', approvals: [] });
  await stillWaiting(t, bot, action);
});

// Holds

test('a stopped agent: approving its waiting action is 403 agent_stopped naming the agent; denying still works', async (t) => {
  const bot = await makeBot(owner, 'stopped-bot', [reviewRule()]);
  const action = await pendingPayment(t, server, bot);
  const stop = await owner.send('POST', `/agents/${bot.agentId}/stop`, { reason: 'investigating' });
  t.is(stop.status, 200, stop.text);

  const refused = await approve(owner, action.approvalId);
  assertError(t, refused, 403, 'agent_stopped');
  t.is(refused.body.error.agentId, bot.agentId);
  t.is(refused.body.error.hold, 'owner');
  t.is(refused.body.error.stopped, 'agent');
  t.like(await findApproval(owner, action.approvalId), { status: 'pending', approvals: [] });
  await stillWaiting(t, bot, action);

  const denied = await deny(owner, action.approvalId, 'agent stopped');
  t.is(denied.status, 200, denied.text);
  t.is(denied.body.status, 'denied');
  const view = await agentView(server, bot, action.id);
  t.is(view.body.decision, 'deny');
  t.deepEqual(view.body.signals, ['approval_denied']);
});

test('after a restart, an action that waited through the stop can be approved', async (t) => {
  const bot = await makeBot(owner, 'restart-approve-bot', [reviewRule()]);
  const action = await pendingPayment(t, server, bot);
  t.is((await owner.send('POST', `/agents/${bot.agentId}/stop`, { reason: 'pause' })).status, 200);
  assertError(t, await approve(owner, action.approvalId), 403, 'agent_stopped');
  t.is((await owner.send('POST', `/agents/${bot.agentId}/restart`)).status, 200);
  const ok = await approve(owner, action.approvalId);
  t.is(ok.status, 200, ok.text);
  await allowedByPeople(t, bot, action);
});

test('approval ids are apr_ ids and the list answers { data, next }', async (t) => {
  const bot = await makeBot(owner, 'list-bot', [reviewRule()]);
  const action = await pendingPayment(t, server, bot);
  t.regex(action.approvalId, APPROVAL_ID);
  const res = await owner.get('/approvals?status=pending&limit=1');
  t.is(res.status, 200, res.text);
  t.true(Array.isArray(res.body.data));
  t.true(res.body.data.length <= 1);
  t.true('next' in res.body);
});
