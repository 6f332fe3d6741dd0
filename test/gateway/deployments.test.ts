import test from 'ava';
import { loadSettings, SettingsError } from '../../src/settings/load.js';
import type { CallRecord } from '../../src/gateway/records.js';
import { manualClock } from '../helpers/clock.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { startGateway, user, type Gateway } from './support.js';

/**
 * Deployments and retries (issue 19 item 6): a model served from several deployments spreads its
 * traffic by weight, skips a deployment whose circuit is open, retries a vendor's 429 or 5xx on
 * its next deployment (waiting out a retry-after that ends within the request's deadline) before
 * failing over to the next model, and never retries the vendor's refusal (other 4xx). Clients are
 * the official SDKs with their own retries off; time is the injected clock.
 */
let vendor: MockVendor;
let gw: Gateway;
const clock = manualClock();
const keys: Record<string, string> = {};

const model = (id: string, price: number, deployments: unknown[]) => ({
  id,
  deployments,
  priceMicrosPerMTokIn: price,
  priceMicrosPerMTokOut: price,
  jurisdiction: { domicile: 'US', region: 'us-east' },
});

test.before(async () => {
  vendor = await startMockVendor();
  gw = await startGateway(
    vendor,
    {
      models: [
        model('spread', 1, [
          { provider: 'vendor-o', upstreamModel: 'spread-a', weight: 3 },
          { provider: 'vendor-a', upstreamModel: 'spread-b', weight: 1 },
        ]),
        // pool-a leads (weights 1000 to 1: smooth round robin first picks pool-b at request 500).
        model('pool', 1, [
          { provider: 'vendor-o', upstreamModel: 'pool-a', weight: 1000 },
          { provider: 'vendor-a', upstreamModel: 'pool-b' },
        ]),
        { ...model('solo', 2, []), deployments: undefined, provider: 'vendor-a', upstreamModel: 'solo-1' },
        model('backup', 50, [{ provider: 'vendor-o', upstreamModel: 'backup-1' }]),
      ],
      policyProfiles: [
        { id: 'spread', models: ['spread'] },
        { id: 'pool', models: ['pool', 'backup'] },
        { id: 'solo', models: ['solo', 'backup'] },
      ],
      breaker: { failures: 3, cooldownMs: 60_000 },
      retry: { deadlineMs: 2000 },
    },
    {},
    { clock },
  );
  for (const profile of ['spread', 'pool', 'solo'])
    keys[profile] = await gw.key({ defaultTaskClass: 'general', policyProfile: profile });
  keys.admin = await gw.key({ scope: 'admin' });
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
});

test.beforeEach(() => {
  vendor.reset();
  // Past every retry-after an earlier test left behind (circuits stay as they are: 60 s cooldown).
  clock.advance(10_000);
});

const chat = async (profile: string) => {
  const { data, response } = await gw
    .openai(keys[profile]!)
    .chat.completions.create({ model: profile, messages: user('hello') })
    .withResponse();
  return { text: data.choices[0]!.message.content, headers: response.headers };
};

async function record(callId: string): Promise<CallRecord> {
  await gw.server.app.services.calls.flush();
  const found = (await gw.server.app.store.tables.calls.scan([])).find((e) => e.value.id === callId)?.value;
  if (!found) throw new Error(`no call record ${callId}`);
  return found;
}

test.serial('traffic spreads over the deployments by weight (3 to 1 over 8 requests)', async (t) => {
  for (let i = 0; i < 8; i++) t.is((await chat('spread')).text, 'echo: hello');
  t.deepEqual({ a: vendor.count('spread-a'), b: vendor.count('spread-b') }, { a: 6, b: 2 });
});

test.serial('the call record and headers name the model; the record names the deployment that answered', async (t) => {
  vendor.fault('pool-a', { kind: 'status', status: 503 });
  const res = await chat('pool');
  t.is(res.text, 'echo: hello');
  t.is(res.headers.get('x-svc-routed-to'), 'pool');
  const rec = await record(res.headers.get('x-svc-call-id')!);
  t.like(rec, { model: 'pool', provider: 'vendor-a', upstreamModel: 'pool-b', attemptedModels: ['pool'] });
});

test.serial('429 with retry-after: the next deployment of the same model serves, not the next model', async (t) => {
  vendor.fault('pool-a', { kind: 'status', status: 429, retryAfterSeconds: 1 });
  const res = await chat('pool');
  t.is(res.text, 'echo: hello');
  t.is(res.headers.get('x-svc-routed-to'), 'pool');
  t.deepEqual(
    vendor.calls.map((c) => c.model),
    ['pool-a', 'pool-b'],
  );
  // The vendor asked for a second: until then every request leaves pool-a alone.
  await chat('pool');
  t.is(vendor.count('pool-a'), 1);
  t.is(vendor.count('pool-b'), 2);
  clock.advance(1000);
  await chat('pool');
  t.is(vendor.count('pool-a'), 2);
  t.is(vendor.count('backup-1'), 0);
});

test.serial('a retry-after within the deadline is waited out and the deployment retried', async (t) => {
  vendor.fault('solo-1', { kind: 'status', status: 429, retryAfterSeconds: 1 });
  const before = clock.now();
  const res = await chat('solo');
  t.is(res.text, 'echo: hello');
  t.is(res.headers.get('x-svc-routed-to'), 'solo');
  t.is(vendor.count('solo-1'), 2);
  t.is(vendor.count('backup-1'), 0);
  t.is(clock.now() - before, 1000, 'the gateway waited the second the vendor asked for');
});

test.serial('a retry-after beyond the deadline fails over to the next model at once', async (t) => {
  vendor.fault('solo-1', { kind: 'status', status: 429, retryAfterSeconds: 5 });
  const before = clock.now();
  const res = await chat('solo');
  t.is(res.text, 'echo: hello');
  t.is(res.headers.get('x-svc-routed-to'), 'backup');
  t.deepEqual(
    vendor.calls.map((c) => c.model),
    ['solo-1', 'backup-1'],
  );
  t.is(clock.now(), before, 'no wait');
});

test.serial('every deployment failing: the next model serves, and 502 names the models tried', async (t) => {
  vendor.fault('pool-a', { kind: 'status', status: 500 });
  vendor.fault('pool-b', { kind: 'status', status: 429, retryAfterSeconds: 30 });
  const res = await chat('pool');
  t.is(res.headers.get('x-svc-routed-to'), 'backup');
  t.deepEqual(
    vendor.calls.map((c) => c.model),
    ['pool-a', 'pool-b', 'backup-1'],
  );
  clock.advance(60_000);
  vendor.reset();
  vendor.fault('pool-a', { kind: 'status', status: 500 });
  vendor.fault('pool-b', { kind: 'status', status: 502 });
  vendor.fault('backup-1', { kind: 'reset' });
  const failed = await call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: bearer(keys.pool!),
    json: { model: 'pool', messages: user('hello') },
  });
  assertError(t, failed, 502, 'upstream_failure');
  t.deepEqual(failed.body.error.attemptedModels, ['pool', 'backup']);
});

test.serial("a vendor's 400 is answered, never retried on another deployment or model", async (t) => {
  vendor.fault('pool-a', { kind: 'status', status: 400 });
  const res = await call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: bearer(keys.pool!),
    json: { model: 'pool', messages: user('hello') },
  });
  assertError(t, res, 400, 'invalid_request');
  t.deepEqual(
    vendor.calls.map((c) => c.model),
    ['pool-a'],
  );
});

test.serial("an open circuit's deployment is skipped; the upstreams report shows each deployment", async (t) => {
  clock.advance(120_000);
  // Three failures in a row open pool-a's circuit (breaker.failures: 3).
  vendor.fault('pool-a', { kind: 'status', status: 500 }, 3);
  for (let i = 0; i < 3; i++) await chat('pool');
  vendor.reset();
  for (let i = 0; i < 3; i++) t.is((await chat('pool')).text, 'echo: hello');
  t.is(vendor.count('pool-a'), 0);
  t.is(vendor.count('pool-b'), 3);
  const report = await call(gw.server.url, 'GET', '/v1/admin/upstreams', { headers: bearer(keys.admin!) });
  t.is(report.status, 200);
  const pool = report.body.data.find((m: { model: string }) => m.model === 'pool');
  t.like(pool, { model: 'pool', provider: 'vendor-o', circuit: 'closed' });
  t.like(pool.deployments[0], { provider: 'vendor-o', upstreamModel: 'pool-a', weight: 1000, circuit: 'open' });
  t.like(pool.deployments[1], { provider: 'vendor-a', upstreamModel: 'pool-b', weight: 1, circuit: 'closed' });
  t.is(typeof pool.deployments[1].observedLatencyMs, 'number');
  // After the cooldown one request tries pool-a again; its success closes the circuit.
  clock.advance(60_000);
  await chat('pool');
  t.is(vendor.count('pool-a'), 1);
});

test('settings: deployments instead of provider and upstreamModel, never both; each names a configured provider', (t) => {
  const provider = { id: 'vendor-o', kind: 'openai', baseUrl: 'http://127.0.0.1:9/v1' };
  const base = model('m', 1, [{ provider: 'vendor-o', upstreamModel: 'm-1' }]);
  const load = (m: unknown) =>
    loadSettings({ env: {}, overrides: { 'gateway.providers': [provider], 'gateway.models': [m] } });
  const loaded = load(base).gateway.models[0]!;
  t.deepEqual(loaded.deployments, [{ provider: 'vendor-o', upstreamModel: 'm-1', weight: 1 }]);
  t.like(loaded, { provider: 'vendor-o', upstreamModel: 'm-1' });
  const plain = load({ ...base, deployments: undefined, provider: 'vendor-o', upstreamModel: 'm-2' }).gateway
    .models[0]!;
  t.deepEqual(plain.deployments, [{ provider: 'vendor-o', upstreamModel: 'm-2', weight: 1 }]);
  const both = t.throws(() => load({ ...base, provider: 'vendor-o', upstreamModel: 'm-2' }), {
    instanceOf: SettingsError,
  });
  t.regex(both!.message, /gateway\.models\[0\]/);
  const unknown = t.throws(
    () =>
      load(
        model('m', 1, [
          { provider: 'vendor-o', upstreamModel: 'a' },
          { provider: 'ghost', upstreamModel: 'b' },
        ]),
      ),
    { instanceOf: SettingsError },
  );
  t.regex(unknown!.message, /gateway\.models\.0\.deployments\.1\.provider: "ghost" is not a configured provider/);
  t.throws(() => load(model('m', 1, [])), { instanceOf: SettingsError });
  t.throws(() => load(model('m', 1, [{ provider: 'vendor-o', upstreamModel: 'a', weight: 0 }])), {
    instanceOf: SettingsError,
  });
});
