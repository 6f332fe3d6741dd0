import test from 'ava';
import type OpenAI from 'openai';
import type Anthropic from '@anthropic-ai/sdk';
import { manualClock } from '../helpers/clock.js';
import { expectStatus } from '../helpers/console.js';
import { assertError, bearer, call } from '../helpers/http.js';
import type { LoopbackVendor } from '../helpers/loopback-vendor.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { poll } from '../helpers/wait.js';
import { startGateway, user, type Gateway } from './support.js';

/**
 * The checks every adapted vendor kind passes (issue 19 item 4), run by vendor-<kind>.test.ts
 * against that vendor's loopback mock: through /v1/chat/completions with the official `openai`
 * SDK and through /v1/messages with `@anthropic-ai/sdk`, whole and streamed; a tool call round
 * trip each way; usage in the call records; failover to the next model on the vendor's 429 and
 * 5xx (streams included, before their first byte); the vendor's refusal of the request answered
 * without failover; a stream cut midway an error; a wrong credential a clear 502
 * upstream_failure naming the model, never the client's 400.
 *
 * The catalogue: `vendorModel` on the vendor (cheapest, so routed first) and `backup` on the
 * OpenAI-kind mock vendor.
 */
export interface VendorSuite {
  kind: string;
  start(): Promise<LoopbackVendor>;
  /** The provider entry (without id and kind) for a vendor at `url`. */
  provider(url: string): Record<string, unknown>;
  /** The environment that holds the right credential, and one that holds a wrong one. */
  env: Record<string, string>;
  wrongEnv: Record<string, string>;
  upstreamModel: string;
  /** What the mock saw that shows the request came in the vendor's shape (path, headers, body). */
  checkRequest(t: import('ava').ExecutionContext, seen: LoopbackVendor['calls'][number], stream: boolean): void;
  /** The 4xx status with which the vendor refuses the client's request. */
  refusal: number;
}

const MODEL = 'vendor-model';
const TOOLS_OPENAI: OpenAI.Chat.Completions.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'search',
      description: 'Search the web',
      parameters: {
        type: 'object',
        properties: { q: { type: 'string' } },
        required: ['q'],
        additionalProperties: false,
      },
    },
  },
];
const TOOLS_ANTHROPIC: Anthropic.Tool[] = [
  {
    name: 'search',
    description: 'Search the web',
    input_schema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
  },
];

export function catalogue(kind: string, upstreamModel: string, only = false) {
  const vendorModel = {
    id: MODEL,
    provider: kind,
    upstreamModel,
    priceMicrosPerMTokIn: 100_000,
    priceMicrosPerMTokOut: 400_000,
    quality: 3,
    latency: 1,
    jurisdiction: { domicile: 'US', region: 'us-east' },
    taskClasses: ['*'],
  };
  const backup = {
    ...vendorModel,
    id: 'backup',
    provider: 'vendor-o',
    upstreamModel: 'backup-2026',
    priceMicrosPerMTokIn: 3_000_000,
    priceMicrosPerMTokOut: 12_000_000,
    quality: 1,
  };
  return only ? [vendorModel] : [vendorModel, backup];
}

export function vendorSuite(s: VendorSuite): void {
  let mock: LoopbackVendor;
  let vendor: MockVendor;
  let gw: Gateway;
  let key: string;
  let admin: string;
  // The gateway's time: a vendor's retry-after keeps its deployment out until it passes (deployments.ts).
  const clock = manualClock();
  const config = (only = false) => ({
    providers: [
      { id: 'vendor-o', kind: 'openai', baseUrl: vendor.openaiBase, apiKeyEnv: 'VENDOR_O_KEY' },
      { id: s.kind, kind: s.kind, ...s.provider(mock.url) },
    ],
    models: catalogue(s.kind, s.upstreamModel, only),
    policyProfiles: [],
    // Failover is what these tests look at: no circuit opens on the vendor's faults.
    breaker: { failures: 1000, cooldownMs: 60_000 },
    // A vendor's retry-after is never waited out here (deployments.test.ts covers the wait): a 429
    // moves to the next model at once, whatever the vendor's mock says.
    retry: { deadlineMs: 0 },
  });
  const modelUsage = async () => {
    const res = await call(gw.server.url, 'GET', '/v1/admin/usage?by=model', { headers: bearer(admin) });
    return (
      (res.body.data as { group: string; calls: number; inputTokens: number; outputTokens: number }[]).find(
        (g) => g.group === MODEL,
      ) ?? { group: MODEL, calls: 0, inputTokens: 0, outputTokens: 0 }
    );
  };

  test.before(async () => {
    mock = await s.start();
    vendor = await startMockVendor();
    gw = await startGateway(vendor, config(), s.env, { clock });
    key = await gw.key({ defaultTaskClass: 'general' });
    admin = await gw.key({ scope: 'admin' });
  });
  test.after.always(async () => {
    if (gw) await stopAndClean(gw.server);
    await mock?.close();
    await vendor?.close();
  });

  test.serial(`${s.kind}: the openai SDK, whole: the vendor answers in its shape, the client reads ours`, async (t) => {
    const before = mock.count(s.upstreamModel);
    const { data, response } = await gw
      .openai(key)
      .chat.completions.create({
        model: MODEL,
        messages: [{ role: 'system', content: 'Be brief.' }, ...user('hello there')],
      })
      .withResponse();
    t.is(data.choices[0]!.message.content, 'echo: hello there');
    t.is(data.choices[0]!.finish_reason, 'stop');
    t.is(data.model, MODEL);
    t.is(response.headers.get('x-svc-routed-to'), MODEL);
    t.deepEqual(
      { prompt: data.usage?.prompt_tokens, completion: data.usage?.completion_tokens },
      { prompt: 4, completion: 3 },
    );
    t.is(mock.count(s.upstreamModel), before + 1);
    s.checkRequest(t, mock.calls.at(-1)!, false);
  });

  test.serial(`${s.kind}: the openai SDK, streamed, with usage when asked`, async (t) => {
    const stream = await gw.openai(key).chat.completions.create({
      model: MODEL,
      messages: user('one two three four'),
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
      t.is(chunk.model, MODEL);
    }
    t.is(text, 'echo: one two three four');
    t.is(finish, 'stop');
    t.like(usage, { prompt_tokens: 4, completion_tokens: 5 });
    s.checkRequest(t, mock.calls.at(-1)!, true);
  });

  test.serial(`${s.kind}: the anthropic SDK, whole and streamed`, async (t) => {
    const client = gw.anthropic(key);
    const whole = await client.messages.create({
      model: MODEL,
      max_tokens: 100,
      system: 'Be brief.',
      messages: user('hello there'),
    });
    t.deepEqual(whole.content, [{ type: 'text', text: 'echo: hello there' } as Anthropic.ContentBlock]);
    t.is(whole.stop_reason, 'end_turn');
    t.is(whole.model, MODEL);
    t.like(whole.usage, { input_tokens: 4, output_tokens: 3 });
    s.checkRequest(t, mock.calls.at(-1)!, false);

    const streamed = await client.messages
      .stream({ model: MODEL, max_tokens: 100, messages: user('one two three') })
      .finalMessage();
    t.is(streamed.content.map((b) => (b.type === 'text' ? b.text : '')).join(''), 'echo: one two three');
    t.is(streamed.stop_reason, 'end_turn');
    t.like(streamed.usage, { input_tokens: 3, output_tokens: 4 });
    s.checkRequest(t, mock.calls.at(-1)!, true);
  });

  test.serial(`${s.kind}: max tokens reached is a length stop in either shape`, async (t) => {
    const o = await gw.openai(key).chat.completions.create({ model: MODEL, max_tokens: 2, messages: user('a b c d') });
    t.is(o.choices[0]!.message.content, 'echo: a');
    t.is(o.choices[0]!.finish_reason, 'length');
    const a = await gw.anthropic(key).messages.create({ model: MODEL, max_tokens: 2, messages: user('a b c d') });
    t.is(a.stop_reason, 'max_tokens');
  });

  test.serial(`${s.kind}: a tool call round trip through the openai SDK, whole and streamed`, async (t) => {
    const client = gw.openai(key);
    const first = await client.chat.completions.create({
      model: MODEL,
      messages: user('please call tool'),
      tools: TOOLS_OPENAI,
    });
    const message = first.choices[0]!.message;
    t.is(first.choices[0]!.finish_reason, 'tool_calls');
    const toolCall = message.tool_calls![0]! as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall;
    t.is(toolCall.function.name, 'search');
    t.deepEqual(JSON.parse(toolCall.function.arguments), { q: 'x' });
    t.truthy(toolCall.id);
    const second = await client.chat.completions.create({
      model: MODEL,
      tools: TOOLS_OPENAI,
      messages: [
        ...user('please call tool'),
        message,
        { role: 'tool', tool_call_id: toolCall.id, content: '{"hits":3}' },
        ...user('thanks'),
      ],
    });
    t.is(second.choices[0]!.message.content, 'echo: thanks');

    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: user('please call tool'),
      tools: TOOLS_OPENAI,
      stream: true,
    });
    let name = '';
    let args = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
        name += call.function?.name ?? '';
        args += call.function?.arguments ?? '';
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    t.deepEqual({ name, args: JSON.parse(args), finish }, { name: 'search', args: { q: 'x' }, finish: 'tool_calls' });
  });

  test.serial(`${s.kind}: a tool call round trip through the anthropic SDK, streamed and whole`, async (t) => {
    const client = gw.anthropic(key);
    const first = await client.messages
      .stream({ model: MODEL, max_tokens: 100, tools: TOOLS_ANTHROPIC, messages: user('please call tool') })
      .finalMessage();
    t.is(first.stop_reason, 'tool_use');
    const use = first.content.find((b) => b.type === 'tool_use')!;
    t.like(use, { type: 'tool_use', name: 'search', input: { q: 'x' } });
    const second = await client.messages.create({
      model: MODEL,
      max_tokens: 100,
      tools: TOOLS_ANTHROPIC,
      messages: [
        ...user('please call tool'),
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: use.id, content: 'three hits' },
            { type: 'text', text: 'thanks' },
          ],
        },
      ],
    });
    t.deepEqual(
      second.content.map((b) => (b.type === 'text' ? b.text : b.type)),
      ['echo: thanks'],
    );
  });

  test.serial(`${s.kind}: the vendor's usage is in the call records, whole and streamed`, async (t) => {
    const before = await modelUsage();
    await gw.openai(key).chat.completions.create({ model: MODEL, messages: user('count these words') });
    await gw
      .anthropic(key)
      .messages.stream({ model: MODEL, max_tokens: 50, messages: user('and these') })
      .finalMessage();
    const after = await poll(modelUsage, (u) => u.calls === before.calls + 2);
    t.deepEqual(
      {
        calls: after.calls - before.calls,
        input: after.inputTokens - before.inputTokens,
        output: after.outputTokens - before.outputTokens,
      },
      { calls: 2, input: 3 + 2, output: 4 + 3 },
    );
  });

  for (const status of [429, 503]) {
    test.serial(`${s.kind}: the vendor's ${status} fails over to the next model, whole and streamed`, async (t) => {
      mock.fault(s.upstreamModel, { kind: 'status', status });
      const res = await call(gw.server.url, 'POST', '/v1/chat/completions', {
        headers: bearer(key),
        json: { model: MODEL, messages: user('hello') },
      });
      t.is(res.status, 200, res.text);
      t.is(res.headers['x-svc-routed-to'], 'backup');
      t.is(res.body.choices[0].message.content, 'echo: hello');

      // Past any retry-after the vendor sent, so that the streamed request tries the vendor again.
      clock.advance(5_000);
      mock.fault(s.upstreamModel, { kind: 'status', status });
      const { data, response } = await gw
        .anthropic(key)
        .messages.stream({ model: MODEL, max_tokens: 50, messages: user('streamed hello') })
        .withResponse();
      t.is(response.headers.get('x-svc-routed-to'), 'backup');
      let text = '';
      for await (const e of data)
        if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
      t.is(text, 'echo: streamed hello');
      // Past any retry-after the vendor sent: the vendor's deployment is tried again by the next tests.
      clock.advance(5_000);
    });
  }

  test.serial(`${s.kind}: the vendor refusing the request is the client's 400, not failed over`, async (t) => {
    mock.fault(s.upstreamModel, { kind: 'status', status: s.refusal });
    const backup = vendor.count('backup-2026');
    const res = await call(gw.server.url, 'POST', '/v1/chat/completions', {
      headers: bearer(key),
      json: { model: MODEL, messages: user('hello') },
    });
    assertError(t, res, 400, 'invalid_request');
    t.regex(res.body.error.message, new RegExp(`${MODEL} refused the request \\(HTTP ${s.refusal}\\): mock fault`));
    t.is(vendor.count('backup-2026'), backup);
  });

  test.serial(`${s.kind}: a stream cut midway is an error for the client, and is not failed over`, async (t) => {
    mock.fault(s.upstreamModel, { kind: 'cut', afterChunks: 3 });
    const backup = vendor.count('backup-2026');
    const stream = await gw.openai(key).chat.completions.create({
      model: MODEL,
      messages: user('one two three four five six seven'),
      stream: true,
    });
    let text = '';
    await t.throwsAsync(async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    });
    t.not(text, 'echo: one two three four five six seven');
    t.is(vendor.count('backup-2026'), backup);
  });

  test.serial(`${s.kind}: redaction reaches the vendor's shape; a block and a dry run send nothing`, async (t) => {
    const chat = (headers: Record<string, string> = {}) =>
      call(gw.server.url, 'POST', '/v1/chat/completions', {
        headers: { ...bearer(key), ...headers },
        json: { model: MODEL, messages: user('mail jane.doe@example.com today') },
      });
    try {
      expectStatus(await gw.owner.send('PUT', '/gateway', { dataLoss: 'redact' }), 200, 'setting');
      const redacted = await chat();
      t.is(redacted.status, 200, redacted.text);
      const sent = JSON.stringify(mock.calls.at(-1)!.body);
      t.false(sent.includes('jane.doe'), 'the address never left');
      t.true(sent.includes('[REDACTED:email]'), sent);

      expectStatus(await gw.owner.send('PUT', '/gateway', { dataLoss: 'block' }), 200, 'setting');
      const before = mock.count();
      assertError(t, await chat(), 400, 'sensitive_data_blocked');
      expectStatus(await gw.owner.send('PUT', '/gateway', { dataLoss: 'off' }), 200, 'setting');
      const dry = await chat({ 'x-svc-dry-run': 'true' });
      t.is(dry.status, 200, dry.text);
      t.is(dry.body.object, 'svc.dry_run');
      t.is(mock.count(), before, 'nothing was sent');
    } finally {
      await gw.owner.send('PUT', '/gateway', { dataLoss: 'off' });
    }
  });

  test.serial(`${s.kind}: a wrong credential is a clear 502 naming the model, never the client's 400`, async (t) => {
    const own = await startGateway(vendor, config(true), s.wrongEnv);
    try {
      const ownKey = await own.key({ defaultTaskClass: 'general' });
      const before = mock.count(s.upstreamModel);
      for (const [path, json] of [
        ['/v1/chat/completions', { model: MODEL, messages: user('hello') }],
        ['/v1/messages', { model: MODEL, max_tokens: 10, messages: user('hello') }],
      ] as const) {
        const res = await call(own.server.url, 'POST', path, { headers: bearer(ownKey), json });
        t.is(res.status, 502, res.text);
        // Both envelopes (ours, and the Anthropic-shaped one) hold the error under `error`.
        const error = res.body.error;
        t.is(error.type, 'upstream_failure');
        t.deepEqual(error.attemptedModels, [MODEL]);
        t.is(error.message, `Every eligible model failed: ${MODEL}.`);
      }
      t.is(mock.count(s.upstreamModel), before + 2, 'the vendor saw, and refused, both');
    } finally {
      await stopAndClean(own.server);
    }
  });
}
