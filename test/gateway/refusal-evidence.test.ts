import test from 'ava';
import { expectStatus, type LedgerRecord } from '../helpers/console.js';
import { assertError, bearer, call, type Reply } from '../helpers/http.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { until } from '../helpers/receiver.js';
import { CATALOGUE, PROFILES, startGateway, user, type Gateway } from './support.js';

/**
 * The gateway's policy refusals are evidence (issue 15 item 6): a stopped
 * agent, data loss blocked, a budget's block and its approval step each leave a ledger record
 * (kind gateway.call_refused, the call's id as subject, the agent or key as actor), and the
 * refusal's error names it in `evidenceRecord`. Records are written off the hot path, so the test
 * waits (bounded) for the batch to land instead of expecting it at once.
 */
let vendor: MockVendor;
let gw: Gateway;
let admin: string;

// 100 dollars per million tokens each way: "hello" at max_tokens 3 costs 300 micro-dollars.
const PRICEY = {
  id: 'pricey',
  provider: 'vendor-o',
  upstreamModel: 'pricey-1',
  priceMicrosPerMTokIn: 100_000_000,
  priceMicrosPerMTokOut: 100_000_000,
  jurisdiction: { domicile: 'US', region: 'us-east' },
};

const chat = (key: string, content = 'hello', model = 'small') =>
  call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: bearer(key),
    json: { model, messages: user(content), max_tokens: 3 },
  });

/** A key minted in the console: its value and its id. */
const mint = async (input: Record<string, unknown>) => {
  const body = expectStatus(
    await gw.owner.send('POST', '/keys', { scope: 'inference', name: 'evidence', ...input }),
    201,
    'key',
  ).body as { id: string; key: string };
  return { id: body.id, key: body.key };
};

/** The ledger record the refusal names, once its batch is written (at most 10 s). */
async function evidenceOf(t: import('ava').ExecutionContext, refused: Reply): Promise<LedgerRecord> {
  const id = refused.body.error?.evidenceRecord as string;
  t.regex(id, /^evr_[0-9A-Za-z]{22}$/, 'the refusal names its evidence record');
  let found: LedgerRecord | undefined;
  await until(
    `ledger record ${id}`,
    async () => (found = (await gw.owner.ledger()).find((r) => r.id === id)) !== undefined,
    10_000,
  );
  t.is(found!.kind, 'gateway.call_refused');
  t.is(found!.subject, String(refused.headers['x-svc-call-id']), "the subject is the refused call's id");
  t.is(found!.data.type, refused.body.error.type);
  return found!;
}

test.before(async () => {
  vendor = await startMockVendor();
  gw = await startGateway(vendor, {
    models: [...CATALOGUE, PRICEY],
    policyProfiles: [...PROFILES, { id: 'pricey-only', models: ['pricey'] }],
  });
  admin = await gw.key({ scope: 'admin' });
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
});

test.serial("agent_stopped: the stopped agent's refused call is a record with the agent as actor", async (t) => {
  const agent = expectStatus(await gw.owner.send('POST', '/agents', { name: 'looper' }), 201, 'agent').body
    .id as string;
  const agentKey = expectStatus(await gw.owner.send('POST', `/agents/${agent}/keys`, {}), 201, 'key').body
    .key as string;
  expectStatus(await gw.owner.send('POST', `/agents/${agent}/stop`, { reason: 'runaway loop' }), 200, 'stop');
  const before = vendor.count();
  const refused = await call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: { ...bearer(agentKey), 'x-svc-task-class': 'general' },
    json: { model: 'small', messages: user('hello') },
  });
  assertError(t, refused, 403, 'agent_stopped');
  const record = await evidenceOf(t, refused);
  t.is(record.actor, `agent:${agent}`);
  t.like(record.data, {
    type: 'agent_stopped',
    step: 'kill-switch',
    agentId: agent,
    hold: 'owner',
    stopped: 'agent',
    model: 'small',
    shape: 'openai',
  });
  t.regex(record.data.keyId as string, /^key_/);
  // The Anthropic-shaped route's envelope carries it too.
  const anth = await call(gw.server.url, 'POST', '/v1/messages', {
    headers: { 'x-api-key': agentKey, 'anthropic-version': '2023-06-01', 'x-svc-task-class': 'general' },
    json: { model: 'small', max_tokens: 10, messages: user('hi') },
  });
  t.is(anth.status, 403);
  t.like((await evidenceOf(t, { ...anth, body: { error: anth.body.error } })).data, { shape: 'anthropic' });
  t.is(vendor.count(), before, 'nothing was sent upstream');
  expectStatus(await gw.owner.send('POST', `/agents/${agent}/restart`), 200, 'restart');
});

test.serial('agent_stopped by "stop every agent": a key bound to no agent is the actor', async (t) => {
  const { id, key } = await mint({ defaultTaskClass: 'general', principal: 'carol', team: 'ops' });
  expectStatus(await gw.owner.send('POST', '/stop-all', { reason: 'incident 12' }), 200, 'stop-all');
  try {
    const refused = await chat(key);
    assertError(t, refused, 403, 'agent_stopped');
    const record = await evidenceOf(t, refused);
    t.is(record.actor, `key:${id}`);
    t.like(record.data, { keyId: id, agentId: null, principal: 'carol', team: 'ops', hold: 'workspace' });
  } finally {
    expectStatus(await gw.owner.send('DELETE', '/stop-all'), 200, 'lift');
  }
});

test.serial('sensitive_data_blocked: the record counts findings by kind and holds no value', async (t) => {
  const { key } = await mint({ defaultTaskClass: 'general' });
  expectStatus(await gw.owner.send('PUT', '/gateway', { dataLoss: 'block' }), 200, 'block');
  try {
    const before = vendor.count();
    const refused = await chat(key, 'pay with 4111 1111 1111 1111 and write to jane.doe@example.com');
    assertError(t, refused, 400, 'sensitive_data_blocked');
    const record = await evidenceOf(t, refused);
    t.deepEqual(record.data.findings, { card: 1, email: 1 });
    t.like(record.data, { step: 'data-loss', taskClass: 'general' });
    const text = JSON.stringify(record);
    t.false(text.includes('4111'), 'no card number in the ledger');
    t.false(text.includes('jane.doe'), 'no address in the ledger');
    t.is(vendor.count(), before);
  } finally {
    expectStatus(await gw.owner.send('PUT', '/gateway', { dataLoss: 'off' }), 200, 'off');
  }
});

test.serial('budget_exhausted: the record names the budget, its scope and what it had used', async (t) => {
  const { key } = await mint({ defaultTaskClass: 'general', team: 'spent', policyProfile: 'pricey-only' });
  const made = await call(gw.server.url, 'POST', '/v1/admin/budgets', {
    headers: bearer(admin),
    json: { scope: { kind: 'team', id: 'spent' }, amountMicros: 300, period: 'day' },
  });
  t.is(made.status, 201, made.text);
  t.is((await chat(key, 'hello', 'pricey')).status, 200, 'the first call uses the budget up');
  const before = vendor.count();
  const refused = await chat(key, 'hello', 'pricey');
  assertError(t, refused, 429, 'budget_exhausted');
  const record = await evidenceOf(t, refused);
  t.like(record.data, {
    step: 'budget',
    budgetId: made.body.id,
    scope: { kind: 'team', id: 'spent' },
    amountMicros: 300,
    usedMicros: 300,
    model: 'pricey',
  });
  t.is(vendor.count(), before);
});

test.serial('approval_required: the record names the budget and who must approve', async (t) => {
  const { key } = await mint({ defaultTaskClass: 'general', team: 'asks', policyProfile: 'pricey-only' });
  const made = await call(gw.server.url, 'POST', '/v1/admin/budgets', {
    headers: bearer(admin),
    json: {
      scope: { kind: 'team', id: 'asks' },
      amountMicros: 1000,
      period: 'month',
      ladder: [
        { at: 0.5, step: 'approval' },
        { at: 1, step: 'block' },
      ],
    },
  });
  t.is(made.status, 201, made.text);
  t.is((await chat(key, 'hello', 'pricey')).status, 200);
  t.is((await chat(key, 'hello', 'pricey')).status, 200);
  const refused = await chat(key, 'hello', 'pricey');
  assertError(t, refused, 402, 'approval_required');
  const record = await evidenceOf(t, refused);
  t.like(record.data, { step: 'budget', budgetId: made.body.id, approverId: gw.owner.id });
});

test.serial('other refusals are not evidence, and carry no evidenceRecord', async (t) => {
  const bare = await gw.key({});
  const res = await chat(bare);
  assertError(t, res, 400, 'unclassified_request');
  t.false('evidenceRecord' in res.body.error);
});

test.serial('GET /v1/admin/upstreams shows the record queues: their bound, and nothing dropped', async (t) => {
  const res = await call(gw.server.url, 'GET', '/v1/admin/upstreams', { headers: bearer(admin) });
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body.recordQueues, {
    calls: { capacity: 10_000, dropped: 0, tasksDropped: 0 },
    refusals: { capacity: 10_000, dropped: 0 },
  });
});
