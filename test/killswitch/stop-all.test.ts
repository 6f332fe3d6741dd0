import test, { type ExecutionContext } from 'ava';
import { ownerConsole, type Person } from '../helpers/console.js';
import { authorize, createAgent } from '../helpers/gate.js';
import { assertError } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import {
  addPerson,
  agentView,
  makeBot,
  pay,
  pendingPayment,
  reviewRule,
  SERVER_ENV,
  type Bot,
} from '../approvals/support.js';

/**
 * "Stop every agent": owners and admins turn it on and off; while it is in
 * force every agent's next authorize is a deny with `agent_frozen`, and no waiting action can be
 * approved. Serial: the switch is one per workspace.
 */

let server: ServedInProcess;
let owner: Person;
let admin: Person;
let member: Person;
let analyst: Person;
let bots: Bot[];

const PAY = [{ actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 }];

test.before(async () => {
  server = await serveInProcess({ env: SERVER_ENV });
  owner = await ownerConsole(server);
  admin = await addPerson(server, owner.wid, 'admin@example.com', 'admin');
  member = await addPerson(server, owner.wid, 'member@example.com', 'member');
  analyst = await addPerson(server, owner.wid, 'analyst@example.com', 'analyst');
  bots = [
    await makeBot(owner, 'fleet-1', PAY),
    await makeBot(owner, 'fleet-2', PAY, member.id),
    await makeBot(owner, 'fleet-3', [reviewRule()], admin.id),
  ];
});

test.after.always(() => stopAndClean(server));

async function decisionOf(bot: Bot): Promise<{ decision: string; signals: string[] }> {
  const res = await authorize(server, bot.key, pay(100, 'fleet'));
  if (res.status !== 200) throw new Error(`authorize: ${res.status} ${res.text}`);
  return { decision: res.body.decision, signals: res.body.signals };
}

async function assertAllFrozen(t: ExecutionContext): Promise<void> {
  for (const bot of bots) t.deepEqual(await decisionOf(bot), { decision: 'deny', signals: ['agent_frozen'] });
}

async function assertAllRun(t: ExecutionContext): Promise<void> {
  for (const bot of bots) t.is((await decisionOf(bot)).decision, 'allow');
}

test.serial('off at first: GET says stopped false', async (t) => {
  const res = await owner.get('/stop-all');
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body, { stopped: false, reason: null, by: null, at: null });
  await assertAllRun(t);
});

test.serial(
  'an owner stops every agent: GET says who, why and when; every authorize is deny agent_frozen; a member may neither turn it on nor off; DELETE lifts it',
  async (t) => {
    const on = await owner.send('POST', '/stop-all', { reason: 'incident 42' });
    t.is(on.status, 200, on.text);
    t.like(on.body, { stopped: true, reason: 'incident 42', by: `user:${owner.id}` });
    t.false(Number.isNaN(Date.parse(on.body.at)));

    for (const who of [owner, admin, member, analyst]) {
      const read = await who.get('/stop-all');
      t.is(read.status, 200, read.text);
      t.deepEqual(read.body, on.body);
    }
    await assertAllFrozen(t);
    const denied = await authorize(server, bots[0]!.key, pay(100, 'reason'));
    t.regex(denied.body.reason, /incident 42/);

    for (const who of [member, analyst]) {
      assertError(t, await who.send('POST', '/stop-all', { reason: 'me too' }), 403, 'forbidden');
      assertError(t, await who.send('DELETE', '/stop-all'), 403, 'forbidden');
    }
    t.like((await owner.get('/stop-all')).body, { stopped: true, reason: 'incident 42', by: `user:${owner.id}` });
    await assertAllFrozen(t);

    const off = await owner.send('DELETE', '/stop-all');
    t.is(off.status, 200, off.text);
    t.deepEqual(off.body, { stopped: false, reason: null, by: null, at: null });
    t.deepEqual((await owner.get('/stop-all')).body, off.body);
    await assertAllRun(t);

    const records = (await owner.ledger()).filter((r) => r.kind.startsWith('workspace.stop_all'));
    t.deepEqual(
      records.map((r) => [r.kind, r.actor, r.subject]),
      [
        ['workspace.stop_all', `user:${owner.id}`, owner.wid],
        ['workspace.stop_all_lifted', `user:${owner.id}`, owner.wid],
      ],
    );
    t.is(records[0]?.data.reason, 'incident 42');
  },
);

test.serial('while every agent is stopped, each agent reads as stopped in the console', async (t) => {
  t.is((await owner.send('POST', '/stop-all', { reason: 'console view' })).status, 200);
  try {
    for (const bot of bots) {
      const view = await owner.get(`/agents/${bot.agentId}`);
      t.is(view.status, 200, view.text);
      t.is(view.body.status, 'stopped', `"stop every agent" in force moves an agent to stopped (${bot.agentId})`);
    }
  } finally {
    t.is((await owner.send('DELETE', '/stop-all')).status, 200);
  }
  for (const bot of bots) t.is((await owner.get(`/agents/${bot.agentId}`)).body.status, 'running');
});

test.serial(
  'an admin turns it on and off too; a waiting action cannot be approved while it is on, but can be denied',
  async (t) => {
    const reviewBot = bots[2]!;
    const waiting = await pendingPayment(t, server, reviewBot, 3000, 'during stop-all');
    const other = await pendingPayment(t, server, reviewBot, 3100, 'denied during stop-all');

    const on = await admin.send('POST', '/stop-all', { reason: 'admin drill' });
    t.is(on.status, 200, on.text);
    t.like(on.body, { stopped: true, reason: 'admin drill', by: `user:${admin.id}` });
    await assertAllFrozen(t);

    const refused = await owner.send('POST', `/approvals/${waiting.approvalId}/approve`, {});
    assertError(t, refused, 403, 'agent_stopped');
    t.is(refused.body.error.agentId, reviewBot.agentId);
    t.is(refused.body.error.stopped, 'workspace');
    t.is((await agentView(server, reviewBot, waiting.id)).body.decision, 'review');

    const denied = await owner.send('POST', `/approvals/${other.approvalId}/deny`, { note: 'not now' });
    t.is(denied.status, 200, denied.text);
    t.is(denied.body.status, 'denied');

    // Turning it on again while on keeps one switch; restarting one agent does not lift it.
    const restart = await owner.send('POST', `/agents/${bots[0]!.agentId}/restart`);
    t.is(restart.status, 200, restart.text);
    t.deepEqual(await decisionOf(bots[0]!), { decision: 'deny', signals: ['agent_frozen'] });

    const off = await admin.send('DELETE', '/stop-all');
    t.is(off.status, 200, off.text);
    t.false(off.body.stopped);
    await assertAllRun(t);

    const ok = await owner.send('POST', `/approvals/${waiting.approvalId}/approve`, {});
    t.is(ok.status, 200, ok.text);
    t.is((await agentView(server, reviewBot, waiting.id)).body.decision, 'allow');

    const records = (await owner.ledger()).filter((r) => r.kind.startsWith('workspace.stop_all'));
    t.deepEqual(
      records.slice(-2).map((r) => [r.kind, r.actor]),
      [
        ['workspace.stop_all', `user:${admin.id}`],
        ['workspace.stop_all_lifted', `user:${admin.id}`],
      ],
    );
  },
);

test.serial('stop-all without a reason is 400 invalid_request naming reason, and nothing stops', async (t) => {
  for (const body of [{}, { reason: '' }, { reason: 12 }]) {
    const res = await owner.send('POST', '/stop-all', body);
    assertError(t, res, 400, 'invalid_request');
    t.true(
      res.body.error.errors?.some((e: { field: string }) => e.field === 'reason'),
      res.text,
    );
  }
  t.false((await owner.get('/stop-all')).body.stopped);
  await assertAllRun(t);
});

test.serial('lifting when nothing is stopped is harmless and writes no record', async (t) => {
  const before = (await owner.ledger()).filter((r) => r.kind === 'workspace.stop_all_lifted').length;
  const res = await owner.send('DELETE', '/stop-all');
  t.is(res.status, 200, res.text);
  t.false(res.body.stopped);
  t.is((await owner.ledger()).filter((r) => r.kind === 'workspace.stop_all_lifted').length, before);
});

test.serial(
  'while stop-all stands, every agent shows stopped with a workspace hold, in the console and to machines',
  async (t) => {
    const owner = await ownerConsole(server);
    const agent = await createAgent(server);
    t.is((await owner.send('POST', '/stop-all', { reason: 'incident 7' })).status, 200);
    try {
      const one = (await owner.get(`/agents/${agent.agentId}`)).body;
      t.like(one, { status: 'stopped', holds: [{ hold: 'workspace', reason: 'incident 7', by: `user:${owner.id}` }] });
      const list = (await owner.get('/agents?limit=200')).body.data as Array<{ id: string; status: string }>;
      t.true(list.every((a) => a.status === 'stopped'));
    } finally {
      t.is((await owner.send('DELETE', '/stop-all')).status, 200);
    }
    t.like((await owner.get(`/agents/${agent.agentId}`)).body, { status: 'running', holds: [] });
  },
);
