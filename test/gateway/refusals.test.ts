import test from 'ava';
import { APIError as OpenAIError } from 'openai';
import { APIError as AnthropicError } from '@anthropic-ai/sdk';
import { expectStatus } from '../helpers/console.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { startGateway, user, type Gateway } from './support.js';

/**
 * The gateway's refusals and steering: each is answered before anything is
 * sent (the mock vendor counts), in the documented error shape, and in Anthropic's envelope on
 * /v1/messages.
 */
let vendor: MockVendor;
let gw: Gateway;
let general: string;

const chat = (key: string, headers: Record<string, string> = {}, body: Record<string, unknown> = {}) =>
  call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: { ...bearer(key), ...headers },
    json: { model: 'small', messages: user('hello'), ...body },
  });

test.before(async () => {
  vendor = await startMockVendor();
  gw = await startGateway(vendor);
  general = await gw.key({ defaultTaskClass: 'general' });
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
});

test.serial("403 agent_stopped: a stopped agent's key reaches the vendor zero times, in both shapes", async (t) => {
  const agent = expectStatus(await gw.owner.send('POST', '/agents', { name: 'writer' }), 201, 'agent').body
    .id as string;
  const agentKey = expectStatus(await gw.owner.send('POST', `/agents/${agent}/keys`, {}), 201, 'key').body
    .key as string;
  t.is((await chat(agentKey, { 'x-svc-task-class': 'general' })).status, 200, 'running, it is served');
  expectStatus(await gw.owner.send('POST', `/agents/${agent}/stop`, { reason: 'runaway loop' }), 200, 'stop');
  const before = vendor.count();
  const refused = await chat(agentKey, { 'x-svc-task-class': 'general' });
  assertError(t, refused, 403, 'agent_stopped');
  t.like(refused.body.error, { hold: 'owner', stopped: 'agent', agentId: agent });
  t.regex(String(refused.headers['x-svc-call-id']), /^call_[0-9A-Za-z]{22}$/, 'a refusal carries its call id');
  t.regex(String(refused.headers['x-svc-overhead-micros']), /^\d+$/);
  const anth = await call(gw.server.url, 'POST', '/v1/messages', {
    headers: { 'x-api-key': agentKey, 'anthropic-version': '2023-06-01', 'x-svc-task-class': 'general' },
    json: { model: 'small', max_tokens: 10, messages: user('hi') },
  });
  t.is(anth.status, 403);
  t.is(anth.body.type, 'error');
  t.like(anth.body.error, { type: 'agent_stopped', agentId: agent, hold: 'owner' });
  t.truthy(anth.body.error.requestId);
  const sdk = await t.throwsAsync(
    gw
      .anthropic(agentKey)
      .messages.create(
        { model: 'small', max_tokens: 10, messages: user('hi') },
        { headers: { 'x-svc-task-class': 'general' } },
      ),
  );
  t.true(sdk instanceof AnthropicError && sdk.status === 403);
  t.is(vendor.count(), before, 'nothing was sent upstream');
  expectStatus(await gw.owner.send('POST', `/agents/${agent}/restart`), 200, 'restart');
});

test.serial('403 agent_stopped: "stop every agent" refuses a key bound to no one agent', async (t) => {
  expectStatus(await gw.owner.send('POST', '/stop-all', { reason: 'incident 12' }), 200, 'stop-all');
  const before = vendor.count();
  const refused = await chat(general);
  assertError(t, refused, 403, 'agent_stopped');
  t.like(refused.body.error, { hold: 'workspace', stopped: 'workspace', agentId: null });
  t.is(vendor.count(), before);
  expectStatus(await gw.owner.send('DELETE', '/stop-all'), 200, 'lift');
  t.is((await chat(general)).status, 200);
});

test.serial('400 unclassified_request: enforcing, with no class from the header or the key', async (t) => {
  const bare = await gw.key({});
  const before = vendor.count('small-2026');
  assertError(t, await chat(bare), 400, 'unclassified_request');
  const err = await t.throwsAsync(gw.openai(bare).chat.completions.create({ model: 'small', messages: user('x') }));
  t.true(err instanceof OpenAIError && err.status === 400);
  t.is((await chat(bare, { 'x-svc-task-class': 'support.billing' })).status, 200, 'the header names a class');
  t.is(vendor.count('small-2026'), before + 1);
});

test.serial('409 policy_conflict lists what would admit a model, at what price, signed off by whom', async (t) => {
  const jp = await gw.key({ defaultTaskClass: 'general', policyProfile: 'jp-only' });
  const res = await chat(jp);
  assertError(t, res, 409, 'policy_conflict');
  const relaxations = res.body.error.relaxations as Array<{
    model: string;
    relax: string[];
    signOff: string;
    priceMicrosPerMTokIn: number;
  }>;
  t.deepEqual(
    relaxations.map((r) => r.model),
    ['small', 'large', 'claude-eu'],
  );
  t.like(relaxations[0], {
    signOff: 'the CISO',
    priceMicrosPerMTokIn: 150_000,
    relax: ['allow domicile US in policy profile jp-only'],
  });
  const sovereign = await chat(await gw.key({ defaultTaskClass: 'general', policyProfile: 'us-only' }), {
    'x-svc-objective': 'sovereign',
  });
  assertError(t, sovereign, 409, 'policy_conflict');
  t.regex(sovereign.body.error.relaxations[0].relax.join(' '), /sovereign/);
});

test.serial('x-svc-objective picks the order: quality, cost, sovereign (home EU)', async (t) => {
  t.is((await chat(general, { 'x-svc-objective': 'quality' })).headers['x-svc-routed-to'], 'large');
  t.is((await chat(general, { 'x-svc-objective': 'cost' })).headers['x-svc-routed-to'], 'small');
  t.is((await chat(general, { 'x-svc-objective': 'sovereign' })).headers['x-svc-routed-to'], 'claude-eu');
  assertError(t, await chat(general, { 'x-svc-objective': 'cheapest' }), 400, 'invalid_request');
});

test.serial(
  'shadow (by policy profile): the requested model serves, and the routing choice is only reported',
  async (t) => {
    const watching = await gw.key({ policyProfile: 'watching' });
    const res = await chat(
      watching,
      {},
      { model: 'large', messages: user('please refactor this typescript function') },
    );
    t.is(res.status, 200, res.text);
    t.is(res.body.model, 'large');
    t.is(res.headers['x-svc-enforcement'], 'shadow');
    t.is(res.headers['x-svc-would-route-to'], 'small');
    t.is(res.headers['x-svc-routed-to'], undefined);
    t.is(vendor.calls.at(-1)!.model, 'large-2026');
    assertError(t, await chat(watching, {}, { model: 'no-such-model' }), 400, 'invalid_request');
    // Shadow observes routing, not the policy: a profile's jurisdictions still bind.
    const eu = await chat(await gw.key({ policyProfile: 'watching-eu' }), {}, { model: 'small' });
    assertError(t, eu, 409, 'policy_conflict');
    t.like(eu.body.error.relaxations[0], {
      model: 'small',
      relax: ['allow domicile US in policy profile watching-eu'],
      signOff: 'the data protection officer',
    });
  },
);

test.serial('high-risk task classes need x-svc-human-oversight: acknowledged', async (t) => {
  const res = await chat(general, { 'x-svc-task-class': 'medical.triage' });
  assertError(t, res, 400, 'invalid_request');
  t.like(res.body.error.errors[0], { field: 'x-svc-human-oversight' });
  t.is(
    (await chat(general, { 'x-svc-task-class': 'medical.triage', 'x-svc-human-oversight': 'acknowledged' })).status,
    200,
  );
});

test.serial('x-svc-dry-run routes and prices without calling a model', async (t) => {
  const before = vendor.count();
  const res = await chat(general, { 'x-svc-dry-run': 'true' }, { max_tokens: 1000 });
  t.is(res.status, 200, res.text);
  t.like(res.body, {
    object: 'svc.dry_run',
    model: 'small',
    taskClass: 'general',
    candidates: ['small', 'claude-eu', 'large'],
  });
  // 1 prompt token ("hello", counted by the tokenizer) at 150,000 and 1,000 output tokens at 600,000 per million.
  t.is(res.body.estimatedCostMicros, 601);
  t.is(res.headers['x-svc-routed-to'], 'small');
  t.is(vendor.count(), before);
});

test.serial(
  'sessions and tasks: a session is issued or echoed; a task id groups calls; bad values are 400',
  async (t) => {
    const first = await chat(general);
    const issued = first.headers['x-svc-session'] as string;
    t.truthy(issued);
    const mine = await chat(general, { 'x-svc-client-session': 'run-42' });
    t.is(mine.headers['x-svc-session'], 'run-42');
    assertError(t, await chat(general, { 'x-svc-client-session': 'x'.repeat(129) }), 400, 'invalid_request');
    assertError(t, await chat(general, { 'x-svc-client-session': 'tab\there' }), 400, 'invalid_request');
    const task = first.headers['x-svc-task-id'] as string;
    const again = await chat(general, { 'x-svc-task-id': task });
    t.is(again.status, 200, again.text);
    t.is(again.headers['x-svc-task-id'], task);
    assertError(t, await chat(general, { 'x-svc-task-id': 'task_0000000000000000000000' }), 400, 'invalid_request');
  },
);

test.serial('a malformed body is 400 in the shape of its route, and nothing is sent', async (t) => {
  const before = vendor.count();
  const eu = await gw.key({ defaultTaskClass: 'general', policyProfile: 'eu-only' });
  // Shapes the translation between vendors reads are checked first: never a 500.
  assertError(
    t,
    await chat(
      eu,
      {},
      { model: 'claude-eu', messages: [{ role: 'assistant', content: 'x', tool_calls: 5 }, ...user('hi')] },
    ),
    400,
    'invalid_request',
  );
  assertError(t, await chat(eu, {}, { model: 'claude-eu', tools: [null] }), 400, 'invalid_request');
  const anthTools = await call(gw.server.url, 'POST', '/v1/messages', {
    headers: bearer(general),
    json: { model: 'small', max_tokens: 5, messages: user('x'), tools: [null] },
  });
  t.like(anthTools.body, { type: 'error', error: { type: 'invalid_request' } });
  const res = await call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: bearer(general),
    json: { model: 'small', messages: [] },
  });
  assertError(t, res, 400, 'invalid_request');
  const anth = await call(gw.server.url, 'POST', '/v1/messages', {
    headers: bearer(general),
    json: { model: 'small', messages: user('x') },
  });
  t.is(anth.status, 400);
  t.like(anth.body, { type: 'error', error: { type: 'invalid_request' } });
  t.true(anth.body.error.errors.some((e: { field: string }) => e.field === 'max_tokens'));
  t.is(vendor.count(), before);
});

test.serial('GET /v1/models lists what the key may reach', async (t) => {
  const all = await call(gw.server.url, 'GET', '/v1/models', { headers: bearer(general) });
  t.deepEqual(
    all.body.data.map((m: { id: string }) => m.id),
    ['small', 'large', 'claude-eu'],
  );
  const eu = await call(gw.server.url, 'GET', '/v1/models', {
    headers: bearer(await gw.key({ policyProfile: 'eu-only' })),
  });
  t.deepEqual(
    eu.body.data.map((m: { id: string }) => m.id),
    ['claude-eu'],
  );
  t.like(eu.body.data[0], {
    provider: 'vendor-a',
    jurisdiction: { domicile: 'EU', region: 'eu-west' },
    priceMicrosPerMTokIn: 1_000_000,
    taskClasses: ['*'],
  });
});
