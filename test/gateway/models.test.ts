import test from 'ava';
import { NotFoundError, AuthenticationError } from 'openai';
import { expectStatus } from '../helpers/console.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { CATALOGUE, startGateway, type Gateway } from './support.js';

/**
 * GET /v1/models/{id} (OpenAI's retrieve model): one model of the catalogue the key may reach, in
 * the same shape as its entry in GET /v1/models; an id outside that catalogue (unknown, or barred
 * by the key's policy profile) is 404 not_found in the OpenAI-compatible error shape. Catalogue
 * ids holding `/` and `:` are reached both percent-encoded (as the SDKs send them) and as is.
 */
const SLASHED = {
  ...CATALOGUE[2]!,
  id: 'anthropic/claude-sonnet-4:thinking',
  upstreamModel: 'claude-sonnet-4-2026',
};

let vendor: MockVendor;
let gw: Gateway;
let general: string;

test.before(async () => {
  vendor = await startMockVendor();
  gw = await startGateway(vendor, { models: [...CATALOGUE, SLASHED] });
  general = await gw.key({ defaultTaskClass: 'general' });
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
});

const get = (path: string, key: string) => call(gw.server.url, 'GET', path, { headers: bearer(key) });

test("GET /v1/models/{id} answers the same entry GET /v1/models lists, in OpenAI's Model shape", async (t) => {
  const list = await get('/v1/models', general);
  t.is(list.status, 200);
  for (const entry of list.body.data as { id: string }[]) {
    const one = await get(`/v1/models/${encodeURIComponent(entry.id)}`, general);
    t.is(one.status, 200, entry.id);
    t.deepEqual(one.body, entry, `${entry.id}: the list's entry`);
  }
  const small = await get('/v1/models/small', general);
  t.like(small.body, {
    id: 'small',
    object: 'model',
    owned_by: 'vendor-o',
    provider: 'vendor-o',
    jurisdiction: { domicile: 'US', region: 'us-east' },
    priceMicrosPerMTokIn: 150_000,
    priceMicrosPerMTokOut: 600_000,
    taskClasses: ['*'],
  });
  t.true(Number.isInteger(small.body.created) && small.body.created > 1_600_000_000, 'created in Unix seconds');
});

test('ids holding / and : are reached percent-encoded and as sent', async (t) => {
  for (const path of [
    '/v1/models/anthropic/claude-sonnet-4:thinking',
    '/v1/models/anthropic%2Fclaude-sonnet-4%3Athinking',
    '/v1/models/anthropic%2fclaude-sonnet-4:thinking',
  ]) {
    const res = await get(path, general);
    t.is(res.status, 200, path);
    t.like(res.body, { id: SLASHED.id, object: 'model', owned_by: 'vendor-a' }, path);
  }
  // A path that only begins with a catalogue id names no model.
  assertError(t, await get('/v1/models/anthropic', general), 404, 'not_found');
  assertError(t, await get('/v1/models/anthropic/claude-sonnet-4:thinking/extra', general), 404, 'not_found');
});

test('the official openai SDK retrieves a model, / and : included, and gets NotFoundError for others', async (t) => {
  const client = gw.openai(general);
  const small = await client.models.retrieve('small');
  t.like(small, { id: 'small', object: 'model', owned_by: 'vendor-o' });
  const slashed = await client.models.retrieve(SLASHED.id);
  t.like(slashed, { id: SLASHED.id, object: 'model', owned_by: 'vendor-a' });
  const missing = await t.throwsAsync(client.models.retrieve('gpt-unknown'));
  t.true(missing instanceof NotFoundError, String(missing));
  t.is((missing as NotFoundError).status, 404);
  t.like((missing as NotFoundError).error, { type: 'not_found' });
  t.regex((missing as NotFoundError).message, /"gpt-unknown" is not in the catalogue this key may reach/);
  const unknownKey = await t.throwsAsync(gw.openai(`ask_${'A'.repeat(43)}`).models.retrieve('small'));
  t.true(unknownKey instanceof AuthenticationError, String(unknownKey));
});

test("an id outside the key's policy profile is 404, exactly like an unknown one", async (t) => {
  const eu = await gw.key({ policyProfile: 'eu-only' });
  const euList = await get('/v1/models', eu);
  t.false(
    (euList.body.data as { id: string }[]).some((m) => m.id === 'small'),
    'the list does not show it either',
  );
  const barred = await get('/v1/models/small', eu);
  const unknown = await get('/v1/models/no-such-model', eu);
  assertError(t, barred, 404, 'not_found');
  assertError(t, unknown, 404, 'not_found');
  t.is(barred.body.error.fix, unknown.body.error.fix);
  t.is(barred.body.error.message, 'Model "small" is not in the catalogue this key may reach.');
  t.is((await get('/v1/models/claude-eu', eu)).status, 200, 'what the profile admits is served');
  const empty = await get('/v1/models/', general);
  assertError(t, empty, 404, 'not_found');
  t.is(empty.body.error.message, 'Model "" is not in the catalogue this key may reach.');
  const long = await get(`/v1/models/${'m'.repeat(5000)}`, general);
  assertError(t, long, 404, 'not_found');
  t.true(long.body.error.message.length < 300, 'a long id is cut short in the message');
});

test('same keys as GET /v1/models: agent keys answer, no key is 401, another credential is not read', async (t) => {
  const agent = expectStatus(await gw.owner.send('POST', '/agents', { name: 'reader' }), 201, 'agent').body
    .id as string;
  const agentKey = expectStatus(await gw.owner.send('POST', `/agents/${agent}/keys`, {}), 201, 'key').body
    .key as string;
  t.like((await get('/v1/models/large', agentKey)).body, { id: 'large', object: 'model' });
  const viaHeader = await call(gw.server.url, 'GET', '/v1/models/large', { headers: { 'x-api-key': general } });
  t.is(viaHeader.status, 200);
  assertError(t, await call(gw.server.url, 'GET', '/v1/models/large'), 401, 'unauthenticated');
  assertError(t, await get('/v1/models/large', `ask_${'B'.repeat(43)}`), 401, 'invalid_api_key');
});
