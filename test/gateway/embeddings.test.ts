import test from 'ava';
import { assertError, bearer, call } from '../helpers/http.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { CATALOGUE, startGateway, type Gateway } from './support.js';

/**
 * POST /v1/embeddings (issue 19 item 2) with the official openai SDK: routed by task class
 * `embedding` among the models that declare it (a `*` chat model never serves it), budgeted and
 * recorded on input tokens only, data-loss screened, refused before anything is sent, and every
 * field at fault listed.
 */
let vendor: MockVendor;
let gw: Gateway;
let key: string;
let admin: string;

const EMBEDDERS = [
  {
    id: 'embed-small',
    provider: 'vendor-o',
    upstreamModel: 'text-embedding-small',
    priceMicrosPerMTokIn: 20_000,
    priceMicrosPerMTokOut: 0,
    quality: 1,
    jurisdiction: { domicile: 'US', region: 'us-east' },
    taskClasses: ['embedding'],
  },
  {
    id: 'embed-large',
    provider: 'vendor-o',
    upstreamModel: 'text-embedding-large',
    priceMicrosPerMTokIn: 130_000_000,
    priceMicrosPerMTokOut: 0,
    quality: 1,
    jurisdiction: { domicile: 'US', region: 'us-east' },
    taskClasses: ['embedding'],
  },
];

test.before(async () => {
  vendor = await startMockVendor();
  gw = await startGateway(vendor, { models: [...CATALOGUE, ...EMBEDDERS] });
  key = await gw.key({ defaultTaskClass: 'general' });
  admin = await gw.key({ scope: 'admin' });
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
});

const post = (k: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  call(gw.server.url, 'POST', '/v1/embeddings', { headers: { ...bearer(k), ...headers }, json: body });

test.serial('embeddings.create: routed to the cheapest embedding model, floats and base64 alike', async (t) => {
  const client = gw.openai(key);
  const { data, response } = await client.embeddings
    .create({ model: 'embed-large', input: 'the quick brown fox', encoding_format: 'float' })
    .withResponse();
  t.is(data.model, 'embed-small', 'the cheapest model that declares embedding; a * chat model never');
  t.is(data.data.length, 1);
  t.is(data.data[0]!.embedding.length, 8);
  t.deepEqual(data.usage, { prompt_tokens: 4, total_tokens: 4 });
  t.is(response.headers.get('x-svc-routed-to'), 'embed-small');
  t.is(response.headers.get('x-svc-cost-micros'), '1', '4 tokens at 20,000 per million, rounded up');
  const sent = vendor.calls.at(-1)!;
  t.is(sent.path, '/v1/embeddings');
  t.is(sent.model, 'text-embedding-small');
  t.is(sent.headers.authorization, 'Bearer sk-mock-openai');

  // The SDK asks for base64 by default and decodes it: the same numbers as floats.
  const decoded = await client.embeddings.create({ model: 'embed-small', input: ['the quick brown fox', 'jumps'] });
  t.is(decoded.data.length, 2);
  t.is(vendor.calls.at(-1)!.body.encoding_format, 'base64');
  decoded.data[0]!.embedding.forEach((x, i) => t.true(Math.abs(x - data.data[0]!.embedding[i]!) < 1e-6));

  const sized = await client.embeddings.create({
    model: 'embed-small',
    input: 'sized',
    dimensions: 3,
    encoding_format: 'float',
  });
  t.is(sized.data[0]!.embedding.length, 3);
  t.is(vendor.calls.at(-1)!.body.dimensions, 3);
});

test.serial('chat routes never reach an embedding model, and embeddings never a chat model', async (t) => {
  const chat = await gw.openai(key).chat.completions.create({
    model: 'embed-small',
    messages: [{ role: 'user', content: 'hello' }],
  });
  t.not(chat.model, 'embed-small');
  t.not(chat.model, 'embed-large');
  const only = await gw.key({ defaultTaskClass: 'general', policyProfile: 'eu-only' });
  const refused = await post(only, { model: 'claude-eu', input: 'hello' });
  assertError(t, refused, 409, 'policy_conflict');
  t.is(refused.body.error.taskClass, 'embedding');
});

test.serial('call records and usage: input tokens only, the embeddings route', async (t) => {
  const recorder = await gw.key({ defaultTaskClass: 'general', principal: 'emma' });
  await gw.openai(recorder).embeddings.create({ model: 'embed-small', input: ['one two', 'three'] });
  await gw.server.app.services.calls.flush();
  const rows = (await gw.server.app.store.tables.calls.scan([gw.server.boot.workspaceId!]))
    .map((e) => e.value)
    .filter((c) => c.principal === 'emma');
  t.is(rows.length, 1);
  t.like(rows[0], {
    shape: 'embeddings',
    taskClass: 'embedding',
    model: 'embed-small',
    inputTokens: 3,
    outputTokens: 0,
    costMicros: 1,
    outcome: 'ok',
  });
  const usage = await call(gw.server.url, 'GET', '/v1/admin/usage?by=taskClass', { headers: bearer(admin) });
  t.like(
    usage.body.data.find((g: { group: string }) => g.group === 'embedding'),
    { outputTokens: 0 },
  );
});

test.serial('data loss: block refuses, redact replaces before the vendor reads it', async (t) => {
  await gw.owner.send('PUT', '/gateway', { dataLoss: 'block' });
  const before = vendor.count();
  const blocked = await post(key, { model: 'embed-small', input: ['fine', 'mail me at ana@example.com'] });
  assertError(t, blocked, 400, 'sensitive_data_blocked');
  t.deepEqual(blocked.body.error.findings, { email: 1 });
  t.is(vendor.count(), before);
  await gw.owner.send('PUT', '/gateway', { dataLoss: 'redact' });
  const redacted = await post(key, { model: 'embed-small', input: 'mail me at ana@example.com' });
  t.is(redacted.status, 200, redacted.text);
  t.is(redacted.headers['x-svc-redacted'], 'email=1');
  t.notRegex(String(vendor.calls.at(-1)!.body.input), /ana@example\.com/);
  await gw.owner.send('PUT', '/gateway', { dataLoss: 'off' });
});

test.serial('embeddings refused before anything is sent: a stopped agent, a spent budget, a dry run', async (t) => {
  const agent = (await gw.owner.send('POST', '/agents', { name: 'embedder' })).body.id as string;
  const agentKey = (await gw.owner.send('POST', `/agents/${agent}/keys`, {})).body.key as string;
  await gw.owner.send('POST', `/agents/${agent}/stop`, { reason: 'runaway' });
  const before = vendor.count();
  assertError(t, await post(agentKey, { model: 'embed-small', input: 'x' }), 403, 'agent_stopped');

  const dry = await post(key, { model: 'embed-small', input: 'hello world' }, { 'x-svc-dry-run': 'true' });
  t.is(dry.status, 200, dry.text);
  t.like(dry.body, { object: 'svc.dry_run', model: 'embed-small', taskClass: 'embedding', estimatedCostMicros: 1 });

  const spender = await gw.key({ defaultTaskClass: 'general', team: 'emb-spent' });
  const made = await call(gw.server.url, 'POST', '/v1/admin/budgets', {
    headers: bearer(admin),
    json: { scope: { kind: 'team', id: 'emb-spent' }, amountMicros: 1, period: 'day' },
  });
  t.is(made.status, 201, made.text);
  t.is((await post(spender, { model: 'embed-small', input: 'spend it' })).status, 200);
  const sent = vendor.count();
  assertError(t, await post(spender, { model: 'embed-small', input: 'again' }), 429, 'budget_exhausted');
  t.is(vendor.count(), sent);
  t.is(sent, before + 1, 'only the call within budget was sent');
});

test.serial('bad bodies: every field at fault listed, nothing sent', async (t) => {
  const before = vendor.count();
  const res = await post(key, { input: [], dimensions: 0, encoding_format: 'int8', stream: true });
  assertError(t, res, 400, 'invalid_request');
  t.deepEqual(res.body.error.errors.map((e: { field: string }) => e.field).sort(), [
    'dimensions',
    'encoding_format',
    'input',
    'model',
    'stream',
  ]);
  assertError(t, await post(key, { model: 'embed-small', input: ['ok', 3] }), 400, 'invalid_request');
  assertError(t, await post(key, { model: 'embed-small', input: '' }), 400, 'invalid_request');
  t.is(vendor.count(), before);
});
