import test, { type ExecutionContext } from 'ava';
import { ownerConsole, type Person } from '../helpers/console.js';
import { assertError } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { manualClock } from '../helpers/clock.js';
import { fixedClock, withStore } from '../helpers/store.js';
import {
  about,
  agentView,
  findApproval,
  makeBot,
  pay,
  pendingPayment,
  reviewRule,
  SERVER_ENV,
  until,
  type Bot,
} from './support.js';

/**
 * Approvals expire (SVC_APPROVAL_TTL_HOURS, default 24): once past its time a waiting approval's
 * action reads as deny `approval_expired`, deciding it is 409 approval_closed, and the server's
 * periodic sweep writes an `approval.expired` ledger record by `system`. Each test runs its own
 * server on a clock the test moves; waits for the sweep are bounded polls, never fixed sleeps.
 */

const servers: ServedInProcess[] = [];
test.after.always(async () => {
  for (const s of servers) await stopAndClean(s);
});

/**
 * A server on a clock the test moves, whose sweep (with the ledger checkpoint) runs every 100 ms
 * instead of every second, so that bounded polls end soon.
 */
async function serve(env: Record<string, string> = {}, clock = manualClock()): Promise<ServedInProcess> {
  const server = await serveInProcess({
    env: { ...SERVER_ENV, SVC_LEDGER_CHECKPOINT_INTERVAL_MS: '100', ...env },
    clock,
  });
  servers.push(server);
  // serve --json prints its error as the one JSON document when the configuration is refused.
  if (!server.boot.listening)
    throw new Error(`the server did not start with ${JSON.stringify(env)}: ${JSON.stringify(server.boot)}`);
  return server;
}

/**
 * Everything an expired approval must show, polled until the server's sweep has run:
 * the agent's view denies with approval_expired, deciding is 409 approval_closed, the list says
 * expired, and the ledger has approval.expired by system (the action's evidence record).
 */
async function assertExpires(
  t: ExecutionContext,
  server: ServedInProcess,
  owner: Person,
  bot: Bot,
  action: { id: string; approvalId: string },
): Promise<void> {
  const view = await until(
    () => agentView(server, bot, action.id),
    (r) => r.body?.decision === 'deny',
    15_000,
  );
  t.is(view.status, 200, view.text);
  t.is(view.body.decision, 'deny');
  t.is(view.body.status, 'denied');
  t.deepEqual(view.body.signals, ['approval_expired']);
  t.is(view.body.receipt, null);

  assertError(
    t,
    await owner.send('POST', `/approvals/${action.approvalId}/approve`, { note: 'too late' }),
    409,
    'approval_closed',
  );
  assertError(t, await owner.send('POST', `/approvals/${action.approvalId}/deny`, {}), 409, 'approval_closed');

  // The sweep: within a few seconds the ledger holds approval.expired by system.
  const records = await until(
    () => about(owner, action.approvalId),
    (rs) => rs.some((r) => r.kind === 'approval.expired'),
    15_000,
  );
  const expired = records.filter((r) => r.kind === 'approval.expired');
  t.is(expired.length, 1, JSON.stringify(records));
  t.is(expired[0]?.actor, 'system');
  t.is(expired[0]?.data.actionId, action.id);
  t.false(
    records.some((r) => r.kind === 'approval.approved' || r.kind === 'approval.denied'),
    'the late decisions were not recorded',
  );

  const after = await agentView(server, bot, action.id);
  t.is(after.body.decision, 'deny');
  t.deepEqual(after.body.signals, ['approval_expired']);
  t.is(after.body.evidenceRecord, expired[0]?.id, 'the denied action names the expiry record as its evidence');
  t.like(await findApproval(owner, action.approvalId), { status: 'expired' });
  t.is(await findApproval(owner, action.approvalId, 'pending'), undefined);
}

test('SVC_APPROVAL_TTL_HOURS=0.0003 (about a second): the approval expires, its action is denied approval_expired, and the sweep records it', async (t) => {
  const clock = manualClock();
  const server = await serve({ SVC_APPROVAL_TTL_HOURS: '0.0003' }, clock);
  const owner = await ownerConsole(server);
  const bot = await makeBot(owner, 'expiring-bot', [reviewRule()]);
  const action = await pendingPayment(t, server, bot);
  const listed = await findApproval(owner, action.approvalId);
  t.truthy(listed);
  const ttl = Date.parse(listed.expiresAt) - Date.parse(listed.createdAt);
  t.true(ttl > 0 && ttl <= 2_000, `expires ${ttl} ms after it was asked`);
  clock.advance(ttl + 1);
  await assertExpires(t, server, owner, bot, action);
});

test('default TTL (24 h): an approval asked 25 hours ago is past its time; the running server denies it and records the expiry', async (t) => {
  const clock = manualClock();
  const server = await serve({}, clock);
  const owner = await ownerConsole(server);
  const bot = await makeBot(owner, 'old-request-bot', [reviewRule()]);
  // The request is made through the gate service on the server's store, with a clock 25 hours
  // back (as a request made then would be): its approval expired an hour ago.
  const asked = await withStore(
    server.dataDir,
    (app) => app.services.gate.authorize({ workspaceId: owner.wid, agentId: bot.agentId }, pay(3000, 'yesterday')),
    { clock: fixedClock(clock.now() - 25 * 3_600_000) },
  );
  t.is(asked.action.decision, 'review');
  const action = { id: asked.action.id, approvalId: asked.action.approvalId! };
  const listed = await findApproval(owner, action.approvalId);
  t.is(Date.parse(listed.expiresAt) - Date.parse(listed.createdAt), 24 * 3_600_000);
  await assertExpires(t, server, owner, bot, action);
});

test('an approval decided in time never expires: no approval.expired record, the action stays allowed', async (t) => {
  const clock = manualClock();
  const server = await serve({ SVC_APPROVAL_TTL_HOURS: '0.0003' }, clock);
  const owner = await ownerConsole(server);
  const bot = await makeBot(owner, 'quick-bot', [reviewRule()]);
  const action = await pendingPayment(t, server, bot);
  const ok = await owner.send('POST', `/approvals/${action.approvalId}/approve`, {});
  t.is(ok.status, 200, ok.text);
  // Past its time now: it stays approved.
  const listed = await until(
    () => findApproval(owner, action.approvalId),
    () => true,
  );
  clock.set(Date.parse(listed.expiresAt) + 2_500);
  // The sweep runs (as the server's interval runs it) with the clock past the approval's time.
  await server.app.services.approvals.expireDue();
  t.is((await findApproval(owner, action.approvalId)).status, 'approved');
  const view = await agentView(server, bot, action.id);
  t.is(view.body.decision, 'allow');
  t.false((await about(owner, action.approvalId)).some((r) => r.kind === 'approval.expired'));
});
