import test from 'ava';
import type { CallRecord } from '../../src/gateway/records.js';
import type { CacheUsage } from '../helpers/cache-usage.js';
import { expectStatus } from '../helpers/console.js';
import { bearer, call, type Reply } from '../helpers/http.js';
import { AZURE_API_VERSION, AZURE_KEY, startMockAzure } from '../helpers/mock-azure.js';
import { AWS_ENV, BEDROCK_REGION, startMockBedrock } from '../helpers/mock-bedrock.js';
import { GEMINI_KEY, startMockGemini } from '../helpers/mock-gemini.js';
import type { LoopbackVendor } from '../helpers/loopback-vendor.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { poll } from '../helpers/wait.js';
import { startGateway, user, type Gateway } from './support.js';

/**
 * Every token counted (issue 35): the prompt-cache reads and writes and the reasoning tokens each
 * vendor kind reports are priced at the model's prices for each, shown in the client's `usage` in
 * either shape, kept in the call record, and counted by budgets, tokens-per-minute limits and
 * usage reports. Known answers from the vendors' published price arithmetic (per million tokens):
 * Claude Sonnet $3 in, $15 out, $3.75 five-minute cache write, $6 one-hour write, $0.30 cache
 * read; GPT-4o $2.50 in, $1.25 cached, $10 out; Gemini 2.5 Pro $1.25 in, $0.125 cached, $10 out.
 *
 * The mocks count the prompt's words as its uncached tokens; the ten-word prompt below at
 * max_tokens 10 is answered with ten tokens, so the issue's call is 10 in, 10 out, 5,000 cache
 * writes and 20,000 cache reads: 30 + 150 + 18,750 + 6,000 = 24,930 micro-dollars.
 */
const TEN = 'one two three four five six seven eight nine ten';
const ISSUE: CacheUsage = { write: 5_000, read: 20_000 };
/** The issue's call as an OpenAI client reads its usage, and as it is recorded. */
const ISSUE_OPENAI_USAGE = { prompt_tokens: 25_010, prompt_tokens_details: { cached_tokens: 20_000 } };
const ISSUE_RECORD = { inputTokens: 25_010, cacheReadTokens: 20_000, cacheWriteTokens: 5_000, costMicros: 24_930 };

const SONNET = {
  priceMicrosPerMTokIn: 3_000_000,
  priceMicrosPerMTokOut: 15_000_000,
  priceMicrosPerMTokCacheRead: 300_000,
  priceMicrosPerMTokCacheWrite: 3_750_000,
  priceMicrosPerMTokCacheWrite1h: 6_000_000,
};
const GPT4O = {
  priceMicrosPerMTokIn: 2_500_000,
  priceMicrosPerMTokOut: 10_000_000,
  priceMicrosPerMTokCacheRead: 1_250_000,
};
const model = (id: string, provider: string, upstreamModel: string, prices: object) => ({
  id,
  provider,
  upstreamModel,
  ...prices,
  quality: 1,
  latency: 1,
  jurisdiction: { domicile: 'US', region: 'us-east' },
  taskClasses: ['*'],
});

let vendor: MockVendor;
let azure: LoopbackVendor;
let gemini: LoopbackVendor;
let bedrock: LoopbackVendor;
let gw: Gateway;
let admin: string;
let teams = 0;

test.before(async () => {
  [vendor, azure, gemini, bedrock] = await Promise.all([
    startMockVendor(),
    startMockAzure(),
    startMockGemini(),
    startMockBedrock(),
  ]);
  gw = await startGateway(
    vendor,
    {
      // The requested model serves: each test names the vendor kind it looks at.
      enforcement: 'shadow',
      providers: [
        { id: 'vendor-o', kind: 'openai', baseUrl: vendor.openaiBase, apiKeyEnv: 'VENDOR_O_KEY' },
        { id: 'vendor-a', kind: 'anthropic', baseUrl: vendor.anthropicBase, apiKeyEnv: 'VENDOR_A_KEY' },
        {
          id: 'azure',
          kind: 'azure-openai',
          baseUrl: azure.url,
          apiVersion: AZURE_API_VERSION,
          apiKeyEnv: 'AZURE_OPENAI_KEY',
        },
        { id: 'gemini', kind: 'gemini', baseUrl: gemini.url, apiKeyEnv: 'GEMINI_API_KEY' },
        { id: 'bedrock', kind: 'bedrock', baseUrl: bedrock.url, region: BEDROCK_REGION },
        // Serves /v1/responses itself: the Responses API passes through.
        { id: 'vendor-r', kind: 'openai', baseUrl: vendor.openaiBase, apiKeyEnv: 'VENDOR_O_KEY', responses: true },
      ],
      models: [
        model('sonnet', 'vendor-a', 'sonnet-up', SONNET),
        model('sonnet-unpriced', 'vendor-a', 'sonnet-unpriced-up', {
          priceMicrosPerMTokIn: 3_000_000,
          priceMicrosPerMTokOut: 15_000_000,
        }),
        model('gpt', 'vendor-o', 'gpt-up', GPT4O),
        model('azure-gpt', 'azure', 'azure-up', GPT4O),
        model('gemini-pro', 'gemini', 'gemini-up', {
          priceMicrosPerMTokIn: 1_250_000,
          priceMicrosPerMTokOut: 10_000_000,
          priceMicrosPerMTokCacheRead: 125_000,
        }),
        model('bedrock-sonnet', 'bedrock', 'bedrock-up', SONNET),
        model('gpt-responses', 'vendor-r', 'gpt-responses-up', GPT4O),
      ],
      policyProfiles: [],
    },
    { AZURE_OPENAI_KEY: AZURE_KEY, GEMINI_API_KEY: GEMINI_KEY, ...AWS_ENV },
  );
  admin = await gw.key({ scope: 'admin' });
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await Promise.all([vendor?.close(), azure?.close(), gemini?.close(), bedrock?.close()]);
});

/** A key of a team of its own, with a budget on that team, and optional limits. */
async function teamKey(limits?: Record<string, number>) {
  const team = `cache-${++teams}`;
  const key = expectStatus(
    await call(gw.server.url, 'POST', '/v1/admin/keys', {
      headers: bearer(admin),
      json: {
        scope: 'inference',
        defaultTaskClass: 'general',
        principal: 'alice',
        team,
        ...(limits ? { limits } : {}),
      },
    }),
    201,
    'key',
  ).body.key as string;
  const budget = expectStatus(
    await call(gw.server.url, 'POST', '/v1/admin/budgets', {
      headers: bearer(admin),
      json: { scope: { kind: 'team', id: team }, amountMicros: 10_000_000, period: 'day' },
    }),
    201,
    'budget',
  ).body.id as string;
  return { team, key, budget };
}

const spentOf = async (id: string): Promise<number> =>
  (
    (await call(gw.server.url, 'GET', '/v1/admin/budgets', { headers: bearer(admin) })).body.data as Array<{
      id: string;
      spentMicros: number;
    }>
  ).find((b) => b.id === id)!.spentMicros;

const teamUsage = async (team: string) =>
  (
    (await call(gw.server.url, 'GET', '/v1/admin/usage?by=team', { headers: bearer(admin) })).body.data as Array<{
      group: string;
    }>
  ).find((g) => g.group === team);

async function recordOf(callId: string): Promise<CallRecord> {
  await gw.server.app.services.calls.flush();
  return (await gw.server.app.store.tables.calls.get([gw.server.boot.workspaceId!, callId]))!;
}

/** The record of a streamed call, once the stream's end settled it. */
const settledRecord = (callId: string) =>
  poll(
    async () => {
      await gw.server.app.services.calls.flush();
      return gw.server.app.store.tables.calls.get([gw.server.boot.workspaceId!, callId]);
    },
    (r) => r !== undefined,
    { timeoutMs: 5_000 },
  ) as Promise<CallRecord>;

const chat = (key: string, body: Record<string, unknown>): Promise<Reply> =>
  call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: bearer(key),
    json: { messages: user(TEN), max_tokens: 10, ...body },
  });
const messages = (key: string, body: Record<string, unknown>): Promise<Reply> =>
  call(gw.server.url, 'POST', '/v1/messages', {
    headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' },
    json: { messages: user(TEN), max_tokens: 10, ...body },
  });

/** A stream to an OpenAI client with its usage asked: the usage chunk's, and the call's settled record. */
async function openaiStream(key: string, model: string) {
  const { data, response } = await gw
    .openai(key)
    .chat.completions.create({
      model,
      messages: user(TEN),
      max_tokens: 10,
      stream: true,
      stream_options: { include_usage: true },
    })
    .withResponse();
  let usage: object = {};
  for await (const chunk of data) usage = chunk.usage ?? usage;
  return { usage, record: await settledRecord(response.headers.get('x-svc-call-id')!) };
}

/** A stream to an Anthropic client: the usage of its message_start and message_delta, and the settled record. */
async function anthropicStream(key: string, model: string) {
  const { data, response } = await gw
    .anthropic(key)
    .messages.create({ model, messages: user(TEN), max_tokens: 10, stream: true })
    .withResponse();
  let start: object = {};
  let end: object = {};
  for await (const event of data) {
    if (event.type === 'message_start') start = event.message.usage;
    if (event.type === 'message_delta') end = event.usage;
  }
  return { start, end, record: await settledRecord(response.headers.get('x-svc-call-id')!) };
}

test.serial(
  "Anthropic: the issue's answer costs 24,930 micros, recorded, spent against the budget and reported",
  async (t) => {
    const { team, key, budget } = await teamKey();
    vendor.fault('sonnet-up', { kind: 'cache', usage: ISSUE });
    const res = await messages(key, { model: 'sonnet' });
    t.is(res.status, 200, res.text);
    t.is(res.headers['x-svc-cost-micros'], '24930');
    t.like(res.body.usage, {
      input_tokens: 10,
      output_tokens: 10,
      cache_creation_input_tokens: 5_000,
      cache_read_input_tokens: 20_000,
    });
    t.like(await recordOf(String(res.headers['x-svc-call-id'])), {
      inputTokens: 25_010,
      outputTokens: 10,
      cacheReadTokens: 20_000,
      cacheWriteTokens: 5_000,
      costMicros: 24_930,
    });
    t.is(await spentOf(budget), 24_930);
    t.like(await teamUsage(team), {
      calls: 1,
      inputTokens: 25_010,
      outputTokens: 10,
      cacheReadTokens: 20_000,
      cacheWriteTokens: 5_000,
      reasoningTokens: 0,
      costMicros: 24_930,
    });
  },
);

test.serial(
  'Anthropic to an OpenAI client, whole and streamed: prompt_tokens counts the cache, cached_tokens its reads',
  async (t) => {
    const { team, key, budget } = await teamKey();
    vendor.fault('sonnet-up', { kind: 'cache', usage: ISSUE }, 2);
    const whole = await chat(key, { model: 'sonnet' });
    t.is(whole.status, 200, whole.text);
    t.is(whole.headers['x-svc-cost-micros'], '24930');
    t.like(whole.body.usage, {
      prompt_tokens: 25_010,
      completion_tokens: 10,
      total_tokens: 25_020,
      prompt_tokens_details: { cached_tokens: 20_000 },
    });

    const streamed = await openaiStream(key, 'sonnet');
    t.like(streamed.usage, ISSUE_OPENAI_USAGE);
    t.like(streamed.record, ISSUE_RECORD);
    t.is(await spentOf(budget), 2 * 24_930);
    t.like(await teamUsage(team), { calls: 2, inputTokens: 50_020, costMicros: 49_860 });
  },
);

test.serial("Anthropic, streamed as is: one-hour cache writes are priced at the model's one-hour price", async (t) => {
  const { key, budget } = await teamKey();
  vendor.fault('sonnet-up', { kind: 'cache', usage: { write: 5_000, write1h: 2_000, read: 20_000 } });
  const streamed = await anthropicStream(key, 'sonnet');
  t.like(streamed.start, { input_tokens: 10, cache_read_input_tokens: 20_000, cache_creation_input_tokens: 5_000 });
  // 3,000 five-minute writes at $3.75 and 2,000 one-hour writes at $6: 11,250 + 12,000; with the
  // reads (6,000), input (30) and output (150): 29,430.
  t.like(streamed.record, {
    inputTokens: 25_010,
    cacheWriteTokens: 5_000,
    cacheWrite1hTokens: 2_000,
    costMicros: 29_430,
  });
  t.is(await spentOf(budget), 29_430);
});

test.serial(
  'a model without cache prices: reads at its input price, writes at 1.25x, never less than the vendor bills',
  async (t) => {
    const { budget, key } = await teamKey();
    vendor.fault('sonnet-unpriced-up', { kind: 'cache', usage: ISSUE });
    const res = await messages(key, { model: 'sonnet-unpriced' });
    t.is(res.status, 200, res.text);
    // 30 in + 150 out + 5,000 writes at $3.75 (18,750) + 20,000 reads at $3 (60,000).
    t.is(res.headers['x-svc-cost-micros'], '78930');
    t.is(await spentOf(budget), 78_930);
  },
);

test.serial(
  'OpenAI: cached and reasoning tokens priced, and named as Anthropic names them for its clients',
  async (t) => {
    const { team, key } = await teamKey();
    const usage = { read: 20_000, reasoning: 50 };
    vendor.fault('gpt-up', { kind: 'cache', usage }, 2);
    // 10 uncached at $2.50 (25) + 20,000 cached at $1.25 (25,000) + 60 out at $10 (600).
    const whole = await chat(key, { model: 'gpt' });
    t.is(whole.status, 200, whole.text);
    t.is(whole.headers['x-svc-cost-micros'], '25625');
    t.like(whole.body.usage, {
      prompt_tokens: 20_010,
      completion_tokens: 60,
      prompt_tokens_details: { cached_tokens: 20_000 },
      completion_tokens_details: { reasoning_tokens: 50 },
    });
    const anthropic = await messages(key, { model: 'gpt' });
    t.is(anthropic.status, 200, anthropic.text);
    t.is(anthropic.headers['x-svc-cost-micros'], '25625');
    t.like(anthropic.body.usage, {
      input_tokens: 10,
      output_tokens: 60,
      cache_read_input_tokens: 20_000,
      cache_creation_input_tokens: 0,
    });
    t.like(await recordOf(String(anthropic.headers['x-svc-call-id'])), {
      inputTokens: 20_010,
      outputTokens: 60,
      cacheReadTokens: 20_000,
      reasoningTokens: 50,
    });
    t.like(await teamUsage(team), { calls: 2, cacheReadTokens: 40_000, reasoningTokens: 100, costMicros: 51_250 });
  },
);

test.serial('Azure OpenAI: cached tokens priced, streamed to an Anthropic client', async (t) => {
  const { key, budget } = await teamKey();
  azure.fault('azure-up', { kind: 'cache', usage: { read: 20_000, reasoning: 50 } });
  const streamed = await anthropicStream(key, 'azure-gpt');
  t.like(streamed.end, { input_tokens: 10, output_tokens: 60, cache_read_input_tokens: 20_000 });
  t.like(streamed.record, {
    inputTokens: 20_010,
    cacheReadTokens: 20_000,
    reasoningTokens: 50,
    costMicros: 25_625,
  });
  t.is(await spentOf(budget), 25_625);
});

test.serial('Gemini: cachedContentTokenCount and thoughtsTokenCount priced and shown', async (t) => {
  const { key, budget } = await teamKey();
  gemini.fault('gemini-up', { kind: 'cache', usage: { read: 20_000, reasoning: 100 } });
  // 10 uncached at $1.25 (12.5) + 20,000 cached at $0.125 (2,500) + 110 out at $10 (1,100), rounded up.
  const res = await chat(key, { model: 'gemini-pro' });
  t.is(res.status, 200, res.text);
  t.is(res.headers['x-svc-cost-micros'], '3613');
  t.like(res.body.usage, {
    prompt_tokens: 20_010,
    completion_tokens: 110,
    prompt_tokens_details: { cached_tokens: 20_000 },
    completion_tokens_details: { reasoning_tokens: 100 },
  });
  t.like(await recordOf(String(res.headers['x-svc-call-id'])), {
    inputTokens: 20_010,
    cacheReadTokens: 20_000,
    reasoningTokens: 100,
    costMicros: 3_613,
  });
  t.is(await spentOf(budget), 3_613);

  gemini.fault('gemini-up', { kind: 'cache', usage: { read: 20_000, reasoning: 100 } });
  const streamed = await anthropicStream(key, 'gemini-pro');
  t.like(streamed.end, { input_tokens: 10, cache_read_input_tokens: 20_000 });
  t.like(streamed.record, { costMicros: 3_613 });
});

test.serial(
  "Bedrock: cacheReadInputTokens and cacheWriteInputTokens, whole and streamed, at the issue's price",
  async (t) => {
    const { team, key, budget } = await teamKey();
    bedrock.fault('bedrock-up', { kind: 'cache', usage: ISSUE }, 2);
    const whole = await messages(key, { model: 'bedrock-sonnet' });
    t.is(whole.status, 200, whole.text);
    t.is(whole.headers['x-svc-cost-micros'], '24930');
    t.like(whole.body.usage, { input_tokens: 10, cache_read_input_tokens: 20_000, cache_creation_input_tokens: 5_000 });

    const streamed = await openaiStream(key, 'bedrock-sonnet');
    t.like(streamed.usage, ISSUE_OPENAI_USAGE);
    t.like(streamed.record, ISSUE_RECORD);
    t.is(await spentOf(budget), 2 * 24_930);
    t.like(await teamUsage(team), { calls: 2, cacheWriteTokens: 10_000, costMicros: 49_860 });
  },
);

test.serial('Responses clients see the cache in input_tokens_details; the call costs the same', async (t) => {
  const { key } = await teamKey();
  vendor.fault('sonnet-up', { kind: 'cache', usage: ISSUE });
  const res = await call(gw.server.url, 'POST', '/v1/responses', {
    headers: bearer(key),
    json: { model: 'sonnet', input: TEN, max_output_tokens: 10 },
  });
  t.is(res.status, 200, res.text);
  t.is(res.headers['x-svc-cost-micros'], '24930');
  t.like(res.body.usage, { input_tokens: 25_010, input_tokens_details: { cached_tokens: 20_000 }, output_tokens: 10 });
});

test.serial(
  'Responses passed through to the vendor: its cached and reasoning tokens priced, whole and streamed',
  async (t) => {
    const { key, budget } = await teamKey();
    vendor.fault('gpt-responses-up', { kind: 'cache', usage: { read: 20_000, reasoning: 50 } }, 2);
    const ask = (stream: boolean) =>
      call(gw.server.url, 'POST', '/v1/responses', {
        headers: bearer(key),
        json: { model: 'gpt-responses', input: TEN, max_output_tokens: 10, stream },
      });
    const whole = await ask(false);
    t.is(whole.status, 200, whole.text);
    // As the OpenAI chat answer above: 25 + 25,000 + 600.
    t.is(whole.headers['x-svc-cost-micros'], '25625');
    t.like(whole.body.usage, {
      input_tokens: 20_010,
      input_tokens_details: { cached_tokens: 20_000 },
      output_tokens_details: { reasoning_tokens: 50 },
    });
    const streamed = await ask(true);
    t.is(streamed.status, 200, streamed.text);
    t.like(await settledRecord(String(streamed.headers['x-svc-call-id'])), {
      inputTokens: 20_010,
      cacheReadTokens: 20_000,
      reasoningTokens: 50,
      costMicros: 25_625,
    });
    t.is(await spentOf(budget), 2 * 25_625);
  },
);

test.serial("tokens per minute count the cache's tokens", async (t) => {
  // The first call is estimated at 20 tokens (10 prompt, 10 max) and settles at 25,020: the
  // minute's 25,000 are used (counted without the cache, 20 would leave room).
  const { key } = await teamKey({ tokensPerMinute: 25_000 });
  vendor.fault('sonnet-up', { kind: 'cache', usage: ISSUE });
  const first = await messages(key, { model: 'sonnet' });
  t.is(first.status, 200, first.text);
  const refused = await messages(key, { model: 'sonnet' });
  t.is(refused.status, 429, refused.text);
  t.like(refused.body.error, { limit: 'tokensPerMinute', used: 25_020 });
});

test.serial('GET /v1/models shows the cache prices a call is charged, set or by default', async (t) => {
  const { key } = await teamKey();
  const res = await call(gw.server.url, 'GET', '/v1/models', { headers: bearer(key) });
  t.is(res.status, 200, res.text);
  const byId = (id: string) => (res.body.data as Array<{ id: string }>).find((m) => m.id === id);
  t.like(byId('sonnet'), {
    priceMicrosPerMTokCacheRead: 300_000,
    priceMicrosPerMTokCacheWrite: 3_750_000,
    priceMicrosPerMTokCacheWrite1h: 6_000_000,
  });
  t.like(byId('sonnet-unpriced'), {
    priceMicrosPerMTokCacheRead: 3_000_000,
    priceMicrosPerMTokCacheWrite: 3_750_000,
    priceMicrosPerMTokCacheWrite1h: 6_000_000,
  });
});
