import test from 'ava';
import { ownerConsole, type Person } from '../helpers/console.js';
import { authorize, payment, PAY_ACME } from '../helpers/gate.js';
import { assertError, bearer, call, type Reply } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { makeBot, SERVER_ENV, type Bot } from '../approvals/support.js';
import { withStore } from '../helpers/store.js';

/**
 * Freezes by service token: one agent, or a selection confirmed by
 * count; past the workspace's ceiling the freeze waits for a person (202 pending) and happens only
 * when one approves. The ledger names the token ("token:<name> froze <n> agents") with its id.
 */
let server: ServedInProcess;
let owner: Person;
let freezer: { token: string; id: string };
let reader: string;
const team: Bot[] = [];
let loner: Bot;

test.before(async () => {
  server = await serveInProcess({ env: { ...SERVER_ENV, SVC_BULK_FREEZE_CEILING: '3' } });
  owner = await ownerConsole(server);
  for (const name of ['red-1', 'red-2']) {
    const bot = await makeBot(owner, name, [PAY_ACME]);
    t_ok(await owner.send('PATCH', `/agents/${bot.agentId}`, { tags: ['red'] }));
    team.push(bot);
  }
  loner = await makeBot(owner, 'loner', [PAY_ACME]);
  await makeBot(owner, 'spare', [PAY_ACME]);
  ({ freezer, reader } = await withStore(server.dataDir, async (app) => {
    const f = await app.services.serviceTokens.create(owner.wid, {
      name: 'ci-kill',
      scopes: ['agents:freeze'],
      expiresInDays: 7,
    });
    const r = await app.services.serviceTokens.create(owner.wid, {
      name: 'ci-read',
      scopes: ['agents:read'],
      expiresInDays: 7,
    });
    return { freezer: { token: f.token, id: f.id }, reader: r.token };
  }));
});

test.after.always(() => stopAndClean(server));

function t_ok(res: Reply): void {
  if (res.status >= 300) throw new Error(`${res.status} ${res.text}`);
}

const freezes = (token: string, body: unknown) =>
  call(server.url, 'POST', '/v1/admin/freezes', { headers: bearer(token), json: body });

test.serial('the bulk-freeze errors', async (t) => {
  assertError(t, await freezes(freezer.token, { reason: 'x', confirmCount: 1 }), 400, 'invalid_selector');
  assertError(t, await freezes(freezer.token, { selector: {}, reason: 'x', confirmCount: 1 }), 400, 'invalid_selector');
  assertError(
    t,
    await freezes(freezer.token, { selector: { colour: 'red' }, reason: 'x', confirmCount: 1 }),
    400,
    'invalid_selector',
  );
  assertError(
    t,
    await freezes(freezer.token, { selector: { tags: ['red'] }, reason: '  ', confirmCount: 2 }),
    400,
    'reason_required',
  );
  // Without a usable confirmCount the answer says how many the selector matches now.
  for (const confirmCount of [undefined, 0, '2', 1.5]) {
    const uncounted = await freezes(freezer.token, { selector: { tags: ['red'] }, reason: 'x', confirmCount });
    assertError(t, uncounted, 409, 'confirm_count_required');
    t.is(uncounted.body.error.count, 2, `confirmCount ${String(confirmCount)}`);
  }
  assertError(
    t,
    await freezes(freezer.token, { selector: { tags: ['blue'] }, reason: 'x', confirmCount: 1 }),
    400,
    'nothing_selected',
  );
  const changed = await freezes(freezer.token, { selector: { tags: ['red'] }, reason: 'x', confirmCount: 5 });
  assertError(t, changed, 409, 'selection_changed');
  t.like(changed.body.error, { oldCount: 5, newCount: 2 });
  assertError(
    t,
    await freezes(reader, { selector: { tags: ['red'] }, reason: 'x', confirmCount: 2 }),
    403,
    'missing_scope',
  );
  for (const bot of team)
    t.is((await authorize(server, bot.key, payment(100))).body.decision, 'allow', 'nothing was frozen');
});

test.serial('a token freezes a selection: 200, every selected agent denied, the ledger names the token', async (t) => {
  const res = await freezes(freezer.token, {
    selector: { tags: ['red'] },
    reason: 'drill gone wrong',
    confirmCount: 2,
  });
  t.is(res.status, 200, res.text);
  t.deepEqual([...res.body.agentIds].sort(), team.map((b) => b.agentId).sort());
  t.is(res.body.frozen, 2);
  for (const bot of team) {
    t.deepEqual((await authorize(server, bot.key, payment(100))).body.signals, ['agent_frozen']);
    t.like((await owner.get(`/agents/${bot.agentId}`)).body, {
      status: 'stopped',
      holds: [{ hold: 'token', by: 'token:ci-kill', reason: 'drill gone wrong' }],
    });
  }
  t.is(
    (await authorize(server, loner.key, payment(100))).body.decision,
    'allow',
    'an agent outside the selection runs on',
  );
  const record = (await owner.ledger()).find((r) => r.kind === 'fleet.frozen');
  t.like(record, {
    actor: 'token:ci-kill',
    tokenId: freezer.id,
    data: { summary: 'token:ci-kill froze 2 agents', count: 2 },
  });
  for (const bot of team) t_ok(await owner.send('POST', `/agents/${bot.agentId}/restart`));
});

test.serial('a token freezes one agent with hold token; the token cannot lift it', async (t) => {
  const res = await call(server.url, 'POST', `/v1/admin/agents/${loner.agentId}/freeze`, {
    headers: bearer(freezer.token),
    json: { reason: 'spend spike' },
  });
  t.is(res.status, 200, res.text);
  t.like(res.body, { status: 'stopped', holds: [{ hold: 'token', by: 'token:ci-kill' }] });
  assertError(
    t,
    await call(server.url, 'POST', `/v1/admin/agents/${loner.agentId}/freeze`, {
      headers: bearer(freezer.token),
      json: { reason: '' },
    }),
    400,
    'reason_required',
  );
  assertError(
    t,
    await call(server.url, 'POST', `/api/w/${owner.wid}/agents/${loner.agentId}/restart`, {
      headers: { ...bearer(freezer.token), 'x-svc-csrf': '1' },
    }),
    401,
    'unauthenticated',
  );
  t.deepEqual((await authorize(server, loner.key, payment(100))).body.signals, ['agent_frozen']);
  t_ok(await owner.send('POST', `/agents/${loner.agentId}/restart`));
});

test.serial('past the ceiling: 202 pending, nothing frozen, until a person approves in the console', async (t) => {
  const all = (await owner.get('/agents?limit=200')).body.data.length as number;
  t.true(all > 3);
  const res = await freezes(freezer.token, { selector: { all: true }, reason: 'incident 9', confirmCount: all });
  t.is(res.status, 202, res.text);
  t.like(res.body, { status: 'pending', count: all });
  t.regex(res.body.approvalId, /^apr_/);
  t.is((await authorize(server, loner.key, payment(100))).body.decision, 'allow', 'nothing is frozen yet');

  const pending = (await owner.get('/approvals?status=pending')).body.data.find(
    (a: { id: string }) => a.id === res.body.approvalId,
  );
  t.like(pending, { freeze: { requestedBy: 'token:ci-kill', reason: 'incident 9', tokenId: freezer.id, all: true } });
  t.false((await owner.get('/stop-all')).body.stopped, '"stop every agent" waits for the person too');
  const approved = await owner.send('POST', `/approvals/${res.body.approvalId}/approve`, { note: 'go' });
  t.is(approved.status, 200, approved.text);
  t.deepEqual((await authorize(server, loner.key, payment(100))).body.signals, ['agent_frozen']);
  const record = (await owner.ledger()).filter((r) => r.kind === 'fleet.frozen').at(-1);
  t.like(record, { actor: `user:${owner.id}`, data: { requestedBy: 'token:ci-kill', count: all } });
  // `all` means what it means everywhere (killswitch/selector.ts): "stop every agent" is on too.
  t.like((await owner.get('/stop-all')).body, { stopped: true, reason: 'incident 9', by: `user:${owner.id}` });
  t.like((await owner.ledger()).filter((r) => r.kind === 'workspace.stop_all').at(-1), { actor: `user:${owner.id}` });
});
