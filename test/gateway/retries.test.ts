import test from 'ava';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import type { CallRecord } from '../../src/gateway/records.js';
import { loadSettings, SettingsError } from '../../src/settings/load.js';
import { manualClock } from '../helpers/clock.js';
import { assertError, bearer, call, type Json } from '../helpers/http.js';
import type { LoopbackFault, LoopbackVendor } from '../helpers/loopback-vendor.js';
import { AZURE_API_VERSION, AZURE_KEY, startMockAzure } from '../helpers/mock-azure.js';
import { AWS_ENV, BEDROCK_REGION, startMockBedrock } from '../helpers/mock-bedrock.js';
import { GEMINI_KEY, startMockGemini } from '../helpers/mock-gemini.js';
import { startMockVendor, type Fault, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { startGateway, user, type Gateway } from './support.js';

/**
 * Retries like a good client (issue 35 part 4), one failover rule for every route and vendor kind
 * (src/gateway/failover.ts), against loopback vendors that answer as the real ones do:
 * - a vendor's named wait (`retry-after` in seconds or an HTTP date, Gemini's google.rpc.RetryInfo)
 *   within `gateway.retry.deadlineMs` is waited and the vendor asked again; beyond it the client
 *   gets `429 upstream_rate_limited` with that `retry-after` and `x-should-retry: true`;
 * - throttling without a named wait (Bedrock's ThrottlingException) is retried with jittered
 *   backoff within the deadline when no other model serves;
 * - a `502` carries `x-should-retry: false`, so the official SDKs, with their default retries,
 *   make one call, not three;
 * - context-window (and content-policy) refusals, in each kind's own shape, move to the models the
 *   key's profile lists, and are answered as the client's 400 otherwise.
 * Time is the injected clock: a wait moves it, so each test sees exactly how long was waited.
 */
const DEADLINE_MS = 1800;
const clock = manualClock();
let vendor: MockVendor;
let azure: LoopbackVendor;
let gemini: LoopbackVendor;
let bedrock: LoopbackVendor;
let gw: Gateway;
const keys: Record<string, string> = {};

const KINDS = ['openai', 'anthropic', 'azure-openai', 'gemini', 'bedrock'] as const;
type Kind = (typeof KINDS)[number];
const UPSTREAM: Record<Kind, string> = {
  openai: 'o-model',
  anthropic: 'a-model',
  'azure-openai': 'z-deployment',
  gemini: 'gemini-2.5-flash',
  bedrock: 'anthropic.claude-3-haiku-20240307-v1:0',
};
const PROVIDER: Record<Kind, string> = {
  openai: 'vendor-o',
  anthropic: 'vendor-a',
  'azure-openai': 'azure',
  gemini: 'gemini',
  bedrock: 'bedrock',
};

const model = (id: string, provider: string, upstreamModel: string, price: number, taskClasses = ['*']) => ({
  id,
  provider,
  upstreamModel,
  priceMicrosPerMTokIn: price,
  priceMicrosPerMTokOut: price,
  quality: 1,
  latency: 1,
  jurisdiction: { domicile: 'US', region: 'us-east' },
  taskClasses,
});

test.before(async () => {
  vendor = await startMockVendor();
  [azure, gemini, bedrock] = await Promise.all([startMockAzure(), startMockGemini(), startMockBedrock()]);
  const models = [
    ...KINDS.map((k) => model(`m-${k}`, PROVIDER[k], UPSTREAM[k], 1)),
    model('big', 'vendor-o', 'big-2026', 50),
    model('m-responses', 'vendor-r', 'r-model', 1),
    model('m-embed', 'vendor-o', 'e-model', 1, ['embedding']),
  ];
  const profiles = [
    ...KINDS.flatMap((k) => [
      { id: `only-${k}`, models: [`m-${k}`] },
      { id: `plain-${k}`, models: [`m-${k}`, 'big'] },
      {
        id: `fallback-${k}`,
        models: [`m-${k}`, 'big'],
        contextWindowFallbacks: { [`m-${k}`]: ['big'] },
        contentPolicyFallbacks: { '*': ['big'] },
      },
    ]),
    { id: 'only-responses', models: ['m-responses'] },
    { id: 'only-embed', models: ['m-embed'] },
  ];
  gw = await startGateway(
    vendor,
    {
      providers: [
        { id: 'vendor-o', kind: 'openai', baseUrl: vendor.openaiBase, apiKeyEnv: 'VENDOR_O_KEY' },
        { id: 'vendor-r', kind: 'openai', baseUrl: vendor.openaiBase, apiKeyEnv: 'VENDOR_O_KEY', responses: true },
        { id: 'vendor-a', kind: 'anthropic', baseUrl: vendor.anthropicBase, apiKeyEnv: 'VENDOR_A_KEY' },
        { id: 'azure', kind: 'azure-openai', baseUrl: azure.url, apiVersion: AZURE_API_VERSION, apiKeyEnv: 'AZ_KEY' },
        { id: 'gemini', kind: 'gemini', baseUrl: gemini.url, apiKeyEnv: 'GEMINI_API_KEY' },
        { id: 'bedrock', kind: 'bedrock', baseUrl: bedrock.url, region: BEDROCK_REGION },
      ],
      models,
      policyProfiles: profiles,
      // Retries are what these tests look at: no circuit opens on the vendors' faults.
      breaker: { failures: 1000, cooldownMs: 60_000 },
      retry: { deadlineMs: DEADLINE_MS },
    },
    { AZ_KEY: AZURE_KEY, GEMINI_API_KEY: GEMINI_KEY, ...AWS_ENV },
    { clock },
  );
  for (const p of profiles) keys[p.id] = await gw.key({ defaultTaskClass: 'general', policyProfile: p.id });
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await Promise.all([vendor?.close(), azure?.close(), gemini?.close(), bedrock?.close()]);
});

test.beforeEach(() => {
  for (const v of [vendor, azure, gemini, bedrock]) v.reset();
  // Never behind real time: Bedrock refuses a signature dated more than five minutes off.
  clock.set(Math.max(clock.now(), Date.now()));
});

/** Past the cool-down a vendor's named wait (beyond the deadline) left on its deployment. */
const pastCooldown = (seconds: number) => clock.advance(seconds * 1000 + 1);

/** Queues a fault on the kind's own mock. */
function fault(kind: Kind, f: Fault & LoopbackFault, times = 1): void {
  if (kind === 'openai' || kind === 'anthropic') vendor.fault(UPSTREAM[kind], f, times);
  else ({ 'azure-openai': azure, gemini, bedrock })[kind].fault(UPSTREAM[kind], f, times);
}
const calls = (kind: Kind): number =>
  kind === 'openai' || kind === 'anthropic'
    ? vendor.count(UPSTREAM[kind])
    : { 'azure-openai': azure, gemini, bedrock }[kind].count(UPSTREAM[kind]);

/** The kind's 429 naming a wait of `seconds`, in its own shape (Gemini: RetryInfo in the body). */
function throttled(kind: Kind, seconds: number): Fault & LoopbackFault {
  if (kind === 'gemini')
    return {
      kind: 'answer',
      status: 429,
      body: {
        error: {
          code: 429,
          message: 'You exceeded your current quota, please check your plan and billing details.',
          status: 'RESOURCE_EXHAUSTED',
          details: [
            {
              '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
              violations: [{ quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests' }],
            },
            { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${seconds}s` },
          ],
        },
      },
    };
  const body =
    kind === 'anthropic'
      ? {
          type: 'error',
          error: { type: 'rate_limit_error', message: 'Number of requests has exceeded your rate limit' },
        }
      : { error: { message: 'Rate limit reached for requests', type: 'requests', code: 'rate_limit_exceeded' } };
  return { kind: 'answer', status: 429, body, headers: { 'retry-after': String(seconds) } };
}

/** The kind's refusal of a prompt longer than its context window, in its own shape. */
function tooLong(kind: Kind): Fault & LoopbackFault {
  switch (kind) {
    case 'openai':
    case 'azure-openai':
      return {
        kind: 'answer',
        status: 400,
        body: {
          error: {
            message:
              "This model's maximum context length is 128000 tokens. However, your messages resulted in 130211 tokens. Please reduce the length of the messages.",
            type: 'invalid_request_error',
            param: 'messages',
            code: 'context_length_exceeded',
          },
        },
      };
    case 'anthropic':
      return {
        kind: 'answer',
        status: 400,
        body: {
          type: 'error',
          error: { type: 'invalid_request_error', message: 'prompt is too long: 215443 tokens > 200000 maximum' },
        },
      };
    case 'gemini':
      return {
        kind: 'answer',
        status: 400,
        body: {
          error: {
            code: 400,
            message: 'The input token count (1250112) exceeds the maximum number of tokens allowed (1048576).',
            status: 'INVALID_ARGUMENT',
          },
        },
      };
    case 'bedrock':
      return {
        kind: 'answer',
        status: 400,
        body: { message: 'Input is too long for requested model.' },
        headers: { 'x-amzn-errortype': 'ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/' },
      };
  }
}

const chat = (profile: string, headers: Record<string, string> = {}) =>
  call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: { ...bearer(keys[profile]!), ...headers },
    json: { model: 'big', messages: user('hello') },
  });

async function record(callId: string): Promise<CallRecord> {
  await gw.server.app.services.calls.flush();
  const found = (await gw.server.app.store.tables.calls.scan([])).find((e) => e.value.id === callId)?.value;
  if (!found) throw new Error(`no call record ${callId}`);
  return found;
}

for (const kind of KINDS) {
  test.serial(`${kind}: a named wait within the deadline is waited, and the vendor asked again`, async (t) => {
    fault(kind, kind === 'bedrock' ? { kind: 'status', status: 429 } : throttled(kind, 1));
    const before = clock.now();
    const res = await chat(`only-${kind}`);
    t.is(res.status, 200, res.text);
    t.is(res.body.choices[0].message.content, 'echo: hello');
    t.is(calls(kind), 2, 'one throttled call, one answered');
    if (kind === 'bedrock') {
      // ThrottlingException names no wait: the first backoff, between half and all of 250 ms.
      t.true(clock.now() - before >= 125 && clock.now() - before <= 250, `${clock.now() - before} ms`);
    } else t.is(clock.now() - before, 1000, 'the second the vendor named');
    const rec = await record(String(res.headers['x-svc-call-id']));
    t.like(rec, { outcome: 'ok', model: `m-${kind}`, attemptedModels: [`m-${kind}`] });
  });
}

for (const kind of KINDS.filter((k) => k !== 'bedrock')) {
  test.serial(`${kind}: a named wait beyond the deadline is the client's 429 with that retry-after`, async (t) => {
    fault(kind, throttled(kind, 30));
    const before = clock.now();
    const res = await chat(`only-${kind}`);
    assertError(t, res, 429, 'upstream_rate_limited');
    t.is(res.headers['retry-after'], '30');
    t.is(res.headers['x-should-retry'], 'true');
    t.deepEqual(res.body.error.attemptedModels, [`m-${kind}`]);
    t.is(calls(kind), 1, 'asked once: the wait was too long to spend');
    t.is(clock.now(), before, 'nothing waited');
    t.like(await record(String(res.headers['x-svc-call-id'])), {
      outcome: 'upstream_failure',
      attemptedModels: [`m-${kind}`],
    });
    pastCooldown(30);
  });
}

test.serial('a retry-after given as an HTTP date is honoured as the seconds until then', async (t) => {
  // On a whole second, as an HTTP date says it: one second from the request's start.
  clock.set(Math.ceil(clock.now() / 1000) * 1000);
  const at = new Date(clock.now() + 1000);
  fault('openai', {
    kind: 'answer',
    status: 429,
    body: { error: { message: 'slow down' } },
    headers: { 'retry-after': at.toUTCString() },
  });
  const res = await chat('only-openai');
  t.is(res.status, 200, res.text);
  t.is(calls('openai'), 2);
  t.is(clock.now(), at.getTime(), 'waited until the date the vendor named');
});

test.serial(
  'bedrock: ThrottlingException without a wait is retried with jittered backoff until the deadline, then 429',
  async (t) => {
    fault('bedrock', { kind: 'status', status: 429 }, Infinity);
    const before = clock.now();
    const res = await chat('only-bedrock');
    assertError(t, res, 429, 'upstream_rate_limited');
    t.is(res.headers['x-should-retry'], 'true');
    t.is(res.headers['retry-after'], undefined, 'Bedrock named no wait');
    // Backoffs of 125-250, 250-500 and 500-1000 ms fit in 1800 ms; a fourth (at least 875 ms more) never does.
    t.is(calls('bedrock'), 4, 'the first call and three backoff retries');
    const waited = clock.now() - before;
    t.true(waited >= 875 && waited <= DEADLINE_MS, `${waited} ms`);
  },
);

test.serial('throttling without a wait fails over to another model at once, before any backoff', async (t) => {
  fault('bedrock', { kind: 'status', status: 429 });
  const before = clock.now();
  const res = await chat('plain-bedrock');
  t.is(res.status, 200, res.text);
  t.is(res.headers['x-svc-routed-to'], 'big');
  t.is(calls('bedrock'), 1);
  t.is(clock.now(), before);
});

test.serial("a 502 says x-should-retry: false, so the SDKs' default retries make one call, not three", async (t) => {
  const openai = new OpenAI({ apiKey: keys['only-openai']!, baseURL: `${gw.server.url}/v1` });
  fault('openai', { kind: 'status', status: 500 }, Infinity);
  const err = (await t.throwsAsync(
    openai.chat.completions.create({ model: 'm-openai', messages: user('hello') }),
  )) as InstanceType<typeof OpenAI.APIError>;
  t.is(err.status, 502);
  t.is(err.headers?.get('x-should-retry'), 'false');
  t.is(calls('openai'), 1, 'the SDK did not call again; the gateway tried the model once');

  const anthropic = new Anthropic({ apiKey: keys['only-anthropic']!, baseURL: gw.server.url });
  fault('anthropic', { kind: 'status', status: 503 }, Infinity);
  const aerr = (await t.throwsAsync(
    anthropic.messages.create({ model: 'm-anthropic', max_tokens: 20, messages: user('hello') }),
  )) as InstanceType<typeof Anthropic.APIError>;
  t.is(aerr.status, 502);
  t.is(calls('anthropic'), 1);
  // Control: the same SDK against a vendor's 502 without the header makes its three calls.
  vendor.reset();
  fault('openai', { kind: 'status', status: 502 }, Infinity);
  const direct = new OpenAI({ apiKey: 'sk-mock-openai', baseURL: vendor.openaiBase });
  await t.throwsAsync(direct.chat.completions.create({ model: UPSTREAM.openai, messages: user('hello') }));
  t.is(calls('openai'), 3, 'without x-should-retry: false, one client call is three vendor calls');
});

test.serial('every refusal of a model route says whether to retry it', async (t) => {
  fault('openai', tooLong('openai'));
  const refused = await chat('only-openai');
  assertError(t, refused, 400, 'invalid_request');
  t.is(refused.headers['x-should-retry'], 'false');
  const unknown = await call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: { ...bearer(keys['only-openai']!), 'x-svc-cache': 'sometimes' },
    json: { model: 'big', messages: user('hello') },
  });
  t.is(unknown.status, 400, unknown.text);
  t.is(unknown.headers['x-should-retry'], 'false', "a step's own refusal too");
});

for (const kind of KINDS) {
  test.serial(`${kind}: a context-window refusal moves to the profile's fallback model`, async (t) => {
    fault(kind, tooLong(kind));
    const res = await chat(`fallback-${kind}`);
    t.is(res.status, 200, res.text);
    t.is(res.headers['x-svc-routed-to'], 'big');
    t.is(calls(kind), 1);
    t.is(vendor.count('big-2026'), 1);
    t.like(await record(String(res.headers['x-svc-call-id'])), { model: 'big', attemptedModels: [`m-${kind}`, 'big'] });
  });

  test.serial(
    `${kind}: without fallbacks in the profile, the context-window refusal is the client's 400`,
    async (t) => {
      fault(kind, tooLong(kind));
      const res = await chat(`plain-${kind}`);
      assertError(t, res, 400, 'invalid_request');
      t.is(res.headers['x-should-retry'], 'false');
      t.is(vendor.count('big-2026'), 0, 'the next model was not asked');
    },
  );
}

test.serial("azure-openai: a content-filter refusal moves to the profile's content-policy fallback", async (t) => {
  fault('azure-openai', {
    kind: 'answer',
    status: 400,
    body: {
      error: {
        message:
          "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.",
        type: null,
        param: 'prompt',
        code: 'content_filter',
        status: 400,
        innererror: {
          code: 'ResponsibleAIPolicyViolation',
          content_filter_result: { hate: { filtered: true, severity: 'high' } },
        },
      },
    },
  });
  const res = await chat('fallback-azure-openai');
  t.is(res.status, 200, res.text);
  t.is(res.headers['x-svc-routed-to'], 'big');
});

test.serial('Responses passed through: a retry-after within the deadline is waited; beyond it, 429', async (t) => {
  const post = () =>
    call(gw.server.url, 'POST', '/v1/responses', {
      headers: bearer(keys['only-responses']!),
      json: { model: 'm-responses', input: 'hello' },
    });
  vendor.fault('r-model', { kind: 'status', status: 429, retryAfterSeconds: 1 });
  const ok = await post();
  t.is(ok.status, 200, ok.text);
  t.is(vendor.count('r-model'), 2);
  t.true(
    vendor.calls.every((c) => c.path === '/v1/responses'),
    'passed through, both times',
  );
  clock.advance(120_000);
  vendor.fault('r-model', { kind: 'status', status: 429, retryAfterSeconds: 20 });
  const later = await post();
  assertError(t, later, 429, 'upstream_rate_limited');
  t.is(later.headers['retry-after'], '20');
  t.is(later.headers['x-should-retry'], 'true');
  pastCooldown(20);
});

test.serial('embeddings: a retry-after within the deadline is waited; beyond it, 429', async (t) => {
  const post = () =>
    call(gw.server.url, 'POST', '/v1/embeddings', {
      headers: bearer(keys['only-embed']!),
      json: { model: 'm-embed', input: 'hello' },
    });
  vendor.fault('e-model', { kind: 'status', status: 429, retryAfterSeconds: 1 });
  const ok = await post();
  t.is(ok.status, 200, ok.text);
  t.is(vendor.count('e-model'), 2);
  vendor.fault('e-model', { kind: 'status', status: 429, retryAfterSeconds: 9 });
  const later = await post();
  assertError(t, later, 429, 'upstream_rate_limited');
  t.is(later.headers['retry-after'], '9');
  pastCooldown(9);
});

test.serial("count_tokens: the vendor's retry-after within the deadline is waited for its exact count", async (t) => {
  const before = clock.now();
  vendor.fault('a-model', { kind: 'status', status: 429, retryAfterSeconds: 1 });
  const res = await call(gw.server.url, 'POST', '/v1/messages/count_tokens?beta=true', {
    headers: { ...bearer(keys['only-anthropic']!), 'anthropic-version': '2023-06-01' },
    json: { model: 'm-anthropic', messages: user('one two three') },
  });
  t.is(res.status, 200, res.text);
  t.is(res.headers['x-svc-token-count'], 'vendor');
  t.is(vendor.count('a-model'), 2);
  t.is(clock.now() - before, 1000);
});

test('settings: fallbacks name configured models, as a map of lists', (t) => {
  const provider = { id: 'vendor-o', kind: 'openai', baseUrl: 'http://127.0.0.1:9/v1' };
  const models = [model('a', 'vendor-o', 'a-1', 1), model('b', 'vendor-o', 'b-1', 2)];
  const load = (profile: Json) =>
    loadSettings({
      env: {},
      overrides: { 'gateway.providers': [provider], 'gateway.models': models, 'gateway.policyProfiles': [profile] },
    });
  const loaded = load({ id: 'p', contextWindowFallbacks: { a: ['b'] }, contentPolicyFallbacks: { '*': ['b'] } });
  t.deepEqual(loaded.gateway.policyProfiles[0]!.contextWindowFallbacks, { a: ['b'] });
  const unknown = t.throws(() => load({ id: 'p', contextWindowFallbacks: { a: ['ghost'] } }), {
    instanceOf: SettingsError,
  });
  t.regex(unknown!.message, /contextWindowFallbacks: "ghost" is not a configured model/);
  t.throws(() => load({ id: 'p', contentPolicyFallbacks: { a: 'b' } }), { instanceOf: SettingsError });
  t.throws(() => load({ id: 'p', contentPolicyFallbacks: { a: [] } }), { instanceOf: SettingsError });
});
