import test from 'ava';
import { APIError } from 'openai';
import type { ResponseInputItem, ResponseStreamEvent } from 'openai/resources/responses/responses';
import { assertError, bearer, call } from '../helpers/http.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { CATALOGUE, PROFILES, startGateway, type Gateway } from './support.js';

/**
 * POST /v1/responses (issue 19 item 1) with the official openai SDK's responses.create and
 * responses.stream: translated to chat completions for an OpenAI-kind vendor and on to an
 * Anthropic-kind one, passed through to a vendor that speaks Responses (`responses: true`), tools
 * round trip, the Responses event order, store and previous_response_id, the 400s, and the call
 * records.
 */
let vendor: MockVendor;
let gw: Gateway;
let key: string;
let euKey: string;
let respKey: string;
let admin: string;

const LOOKUP = {
  type: 'function' as const,
  name: 'lookup',
  description: 'looks a word up',
  parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
  strict: false,
};

test.before(async () => {
  vendor = await startMockVendor();
  gw = await startGateway(vendor, {
    providers: [
      { id: 'vendor-o', kind: 'openai', baseUrl: vendor.openaiBase, apiKeyEnv: 'VENDOR_O_KEY' },
      { id: 'vendor-a', kind: 'anthropic', baseUrl: vendor.anthropicBase, apiKeyEnv: 'VENDOR_A_KEY' },
      { id: 'vendor-r', kind: 'openai', baseUrl: vendor.openaiBase, apiKeyEnv: 'VENDOR_O_KEY', responses: true },
    ],
    models: [
      ...CATALOGUE,
      {
        id: 'gpt-r',
        provider: 'vendor-r',
        upstreamModel: 'gpt-r-2026',
        priceMicrosPerMTokIn: 2_000_000,
        priceMicrosPerMTokOut: 8_000_000,
        quality: 2,
        latency: 1,
        jurisdiction: { domicile: 'US', region: 'us-west' },
        taskClasses: ['*'],
      },
    ],
    policyProfiles: [...PROFILES, { id: 'responses-only', providers: ['vendor-r'] }],
  });
  key = await gw.key({ defaultTaskClass: 'general' });
  euKey = await gw.key({ defaultTaskClass: 'general', policyProfile: 'eu-only' });
  respKey = await gw.key({ defaultTaskClass: 'general', policyProfile: 'responses-only' });
  admin = await gw.key({ scope: 'admin' });
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
});

const post = (k: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  call(gw.server.url, 'POST', '/v1/responses', { headers: { ...bearer(k), ...headers }, json: body });

test.serial('responses.create, translated to chat completions: text, usage, cost and routing headers', async (t) => {
  const { data, response } = await gw
    .openai(key)
    .responses.create({
      model: 'large',
      instructions: 'be brief',
      input: 'hello there',
      metadata: { ticket: '4521' },
    })
    .withResponse();
  t.is(data.object, 'response');
  t.is(data.status, 'completed');
  t.is(data.output_text, 'echo: hello there');
  t.is(data.model, 'small', 'routed by objective; the answer names the model that served');
  t.deepEqual(data.metadata, { ticket: '4521' });
  t.is(data.instructions, 'be brief');
  t.like(data.usage, { input_tokens: 4, output_tokens: 3, total_tokens: 7 });
  t.regex(data.id, /^resp_/);
  t.is(response.headers.get('x-svc-routed-to'), 'small');
  t.is(response.headers.get('x-svc-cost-micros'), '3');
  const seen = vendor.calls.at(-1)!;
  t.is(seen.path, '/v1/chat/completions');
  t.is(seen.model, 'small-2026');
  t.deepEqual(seen.body.messages, [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: 'hello there' },
  ]);
  t.is(seen.body.max_completion_tokens, 4096, 'a bound on the answer, for the reservation');
});

test.serial('responses.stream, translated: the Responses event sequence, in order, with usage', async (t) => {
  const stream = gw.openai(key).responses.stream({ model: 'small', input: 'stream me some words' });
  const events: ResponseStreamEvent[] = [];
  let text = '';
  for await (const event of stream) {
    events.push(event);
    if (event.type === 'response.output_text.delta') text += event.delta;
  }
  const final = await stream.finalResponse();
  t.is(text, 'echo: stream me some words');
  t.is(final.output_text, 'echo: stream me some words');
  t.like(final.usage, { input_tokens: 4, output_tokens: 5 });
  const order = events.map((e) => e.type).filter((type, i, all) => type !== all[i - 1]);
  t.deepEqual(order, [
    'response.created',
    'response.in_progress',
    'response.output_item.added',
    'response.content_part.added',
    'response.output_text.delta',
    'response.output_text.done',
    'response.content_part.done',
    'response.output_item.done',
    'response.completed',
  ]);
  t.deepEqual(
    events.map((e) => e.sequence_number),
    events.map((_, i) => i),
    'sequence numbers count up from 0',
  );
  t.deepEqual(vendor.calls.at(-1)!.body.stream_options, { include_usage: true });
});

test.serial('tools round trip: a function call, then its output, streaming and not', async (t) => {
  const client = gw.openai(key);
  const first = await client.responses.create({ model: 'small', input: 'please call tool now', tools: [LOOKUP] });
  const fc = first.output.find((o) => o.type === 'function_call');
  t.truthy(fc, JSON.stringify(first.output));
  if (fc?.type !== 'function_call') return;
  t.is(fc.name, 'lookup');
  t.is(fc.call_id, 'call_1');
  t.deepEqual(JSON.parse(fc.arguments), { q: 'x' });
  t.deepEqual(vendor.calls.at(-1)!.body.tools, [
    {
      type: 'function',
      function: {
        name: 'lookup',
        description: 'looks a word up',
        parameters: LOOKUP.parameters,
        strict: false,
      },
    },
  ]);

  const input: ResponseInputItem[] = [
    { role: 'user', content: 'please call tool now' },
    { type: 'function_call', call_id: fc.call_id, name: fc.name, arguments: fc.arguments },
    { type: 'function_call_output', call_id: fc.call_id, output: 'found it' },
  ];
  const second = await client.responses.create({ model: 'small', input, tools: [LOOKUP] });
  t.is(second.output_text, 'echo: please call tool now');
  t.like(vendor.calls.at(-1)!.body.messages, [
    { role: 'user', content: 'please call tool now' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', function: { name: 'lookup' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: 'found it' },
  ]);

  const stream = client.responses.stream({ model: 'small', input: 'now call tool', tools: [LOOKUP] });
  const types: string[] = [];
  let args = '';
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === 'response.function_call_arguments.delta') args += event.delta;
  }
  const final = await stream.finalResponse();
  t.is(args, '{"q":"x"}');
  t.like(final.output[0], { type: 'function_call', name: 'lookup', arguments: '{"q":"x"}', status: 'completed' });
  t.true(types.includes('response.function_call_arguments.done'));
  t.is(types.at(-1), 'response.completed');
});

test.serial('translated to an Anthropic-kind vendor, streaming and not, tools included', async (t) => {
  const client = gw.openai(euKey);
  const res = await client.responses.create({
    model: 'claude-eu',
    instructions: 'be kind',
    input: [{ role: 'user', content: [{ type: 'input_text', text: 'bonjour le monde' }] }],
    max_output_tokens: 100,
  });
  t.is(res.output_text, 'echo: bonjour le monde');
  t.is(res.model, 'claude-eu');
  const sent = vendor.calls.at(-1)!;
  t.is(sent.path, '/v1/messages');
  t.is(sent.body.system, 'be kind');
  t.is(sent.body.max_tokens, 100);

  const stream = client.responses.stream({ model: 'claude-eu', input: 'stream across vendors' });
  let text = '';
  stream.on('response.output_text.delta', (e) => {
    text += e.delta;
  });
  const final = await stream.finalResponse();
  t.is(text, 'echo: stream across vendors');
  t.like(final.usage, { output_tokens: 4 });

  const tool = await client.responses.create({ model: 'claude-eu', input: 'call tool please', tools: [LOOKUP] });
  t.like(tool.output[0], { type: 'function_call', call_id: 'toolu_1', name: 'lookup' });
  t.is(vendor.calls.at(-1)!.body.tools[0].name, 'lookup');

  const streamedTool = client.responses.stream({ model: 'claude-eu', input: 'call tool again', tools: [LOOKUP] });
  let args = '';
  streamedTool.on('response.function_call_arguments.delta', (e) => {
    args += e.delta;
  });
  const done = await streamedTool.finalResponse();
  t.is(args, '{"q":"x"}');
  t.like(done.output[0], { type: 'function_call', call_id: 'toolu_1', name: 'lookup', arguments: '{"q":"x"}' });
});

test.serial('a length stop is an incomplete response naming max_output_tokens', async (t) => {
  const res = await gw
    .openai(key)
    .responses.create({ model: 'small', input: 'one two three four five', max_output_tokens: 2 });
  t.is(res.status, 'incomplete');
  t.deepEqual(res.incomplete_details, { reason: 'max_output_tokens' });
  t.is(res.output_text, 'echo: one');
});

test.serial('passed through to a vendor that speaks Responses, with store and previous_response_id', async (t) => {
  const client = gw.openai(respKey);
  const { data, response } = await client.responses
    .create({ model: 'gpt-r', input: 'remember me', store: true })
    .withResponse();
  t.is(data.output_text, 'echo: remember me');
  t.is(data.model, 'gpt-r', "the vendor's own model name is replaced by the catalogue's");
  t.is(response.headers.get('x-svc-routed-to'), 'gpt-r');
  const sent = vendor.calls.at(-1)!;
  t.is(sent.path, '/v1/responses');
  t.is(sent.model, 'gpt-r-2026');
  t.is(sent.headers.authorization, 'Bearer sk-mock-openai');
  t.is(sent.body.store, true);

  const next = await client.responses.create({ model: 'gpt-r', input: 'and again', previous_response_id: data.id });
  t.is(next.output_text, 'echo: and again');
  t.is(vendor.calls.at(-1)!.body.previous_response_id, data.id);

  const stream = client.responses.stream({ model: 'gpt-r', input: 'stream it through' });
  let text = '';
  for await (const e of stream) if (e.type === 'response.output_text.delta') text += e.delta;
  const final = await stream.finalResponse();
  t.is(text, 'echo: stream it through');
  t.is(final.model, 'gpt-r');
  t.like(final.usage, { input_tokens: 3, output_tokens: 4 });
});

test.serial('store: true keeps to the vendors that keep state; with none, a 400 naming each field', async (t) => {
  const narrowed = await post(key, { model: 'small', input: 'hi', store: true });
  t.is(narrowed.status, 200, narrowed.text);
  t.is(narrowed.headers['x-svc-routed-to'], 'gpt-r', 'the one model at a vendor that keeps responses');
  // The EU-only key reaches no vendor that keeps responses.
  const before = vendor.count();
  const stored = await post(euKey, { model: 'claude-eu', input: 'hi', store: true });
  assertError(t, stored, 400, 'invalid_request');
  t.deepEqual(
    stored.body.error.errors.map((e: { field: string }) => e.field),
    ['store'],
  );
  t.regex(stored.body.error.fix, /input/);
  const chained = await post(euKey, { model: 'claude-eu', input: 'hi', previous_response_id: 'resp_1', store: true });
  assertError(t, chained, 400, 'invalid_request');
  t.deepEqual(
    chained.body.error.errors.map((e: { field: string }) => e.field),
    ['store', 'previous_response_id'],
  );
  t.is((await post(euKey, { model: 'claude-eu', input: 'hi', store: false })).status, 200, 'store: false is fine');
  t.is(vendor.count(), before + 1);
  const sdk = await t.throwsAsync(gw.openai(euKey).responses.create({ model: 'claude-eu', input: 'x', store: true }));
  t.true(sdk instanceof APIError && sdk.status === 400);
});

test.serial('unsupported features are a 400 naming every field at fault, and nothing is sent', async (t) => {
  const before = vendor.count();
  const res = await post(key, {
    model: 'small',
    input: [
      { role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }] },
      { type: 'web_search_call', id: 'ws_1', status: 'completed' },
      { type: 'function_call', name: 'f', arguments: '{}' },
    ],
    tools: [{ type: 'web_search' }, { type: 'function', name: 'has space' }],
    background: true,
    max_output_tokens: 0,
    prompt: { id: 'pmpt_1' },
  });
  assertError(t, res, 400, 'invalid_request');
  const fields = res.body.error.errors.map((e: { field: string }) => e.field);
  t.deepEqual(
    [...fields].sort(),
    ['background', 'input.0.content.0.type', 'input.2.call_id', 'max_output_tokens', 'prompt', 'tools.1.name'],
    JSON.stringify(res.body.error.errors),
  );
  t.regex(res.body.error.message, /audio/);
  t.is(vendor.count(), before);
  assertError(t, await post(key, { model: 'small' }), 400, 'invalid_request');
});

// Codex CLI's tools: a namespace of function tools, a custom tool, a hosted one, and its
// additional_tools item and custom tool calls in the input.
const agentTools = {
  input: [
    {
      type: 'additional_tools',
      role: 'developer',
      tools: [
        { type: 'namespace', name: 'collaboration', description: '', tools: [{ type: 'function', name: 'wait' }] },
      ],
    },
    { role: 'user', content: 'run it' },
    { type: 'custom_tool_call', call_id: 'call_1', name: 'exec', input: 'text(1)' },
    { type: 'custom_tool_call_output', call_id: 'call_1', output: '1' },
  ],
  tools: [
    { type: 'custom', name: 'exec', format: { type: 'grammar', syntax: 'lark', definition: 'start: /.+/' } },
    { type: 'web_search' },
  ],
};

test.serial(
  'namespaces, hosted and custom tools and their items pass through to a vendor that speaks Responses',
  async (t) => {
    vendor.reset();
    const res = await post(respKey, { model: 'gpt-r', ...agentTools });
    t.is(res.status, 200, res.text);
    const sent = vendor.calls.at(-1)!;
    t.is(sent.path, '/v1/responses');
    t.deepEqual(sent.body.input, agentTools.input);
    t.deepEqual(sent.body.tools, agentTools.tools);
    // Routed there even when the key may reach others: the vendor that can take them as they are.
    t.is((await post(key, { model: 'gpt-r', ...agentTools })).status, 200);
  },
);

test.serial(
  'a namespace of function tools is carried to a vendor asked in chat completions, its call named as offered',
  async (t) => {
    vendor.reset();
    const tools = [
      {
        type: 'namespace',
        name: 'collaboration',
        description: 'Work with other agents',
        tools: [{ type: 'function', name: 'spawn_agent', parameters: { type: 'object', properties: {} } }],
      },
    ];
    const res = await post(key, { model: 'small', input: 'call tool', tools });
    t.is(res.status, 200, res.text);
    const sent = vendor.calls.at(-1)!;
    t.is(sent.path, '/v1/chat/completions');
    t.deepEqual(
      sent.body.tools.map((x: { function: { name: string } }) => x.function.name),
      ['collaboration__spawn_agent'],
    );
    t.like(res.body.output[0], { type: 'function_call', namespace: 'collaboration', name: 'spawn_agent' });

    const streamed = await post(key, { model: 'small', input: 'call tool', tools, stream: true });
    t.is(streamed.status, 200, streamed.text);
    t.regex(streamed.text, /"type":"function_call"[^}]*"namespace":"collaboration","name":"spawn_agent"/);

    // The call and its output sent back: the vendor sees the call under the name it offered.
    const next = await post(key, {
      model: 'small',
      tools,
      input: [
        { role: 'user', content: 'call tool' },
        { type: 'function_call', call_id: 'call_1', namespace: 'collaboration', name: 'spawn_agent', arguments: '{}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'spawned' },
      ],
    });
    t.is(next.status, 200, next.text);
    t.is(vendor.calls.at(-1)!.body.messages[1].tool_calls[0].function.name, 'collaboration__spawn_agent');
  },
);

test.serial(
  'hosted tools are refused by name when no vendor that speaks Responses may serve; namespaces and custom tools are not',
  async (t) => {
    const before = vendor.count();
    const res = await post(euKey, { model: 'claude-eu', ...agentTools });
    assertError(t, res, 400, 'invalid_request');
    t.deepEqual(
      res.body.error.errors.map((e: { field: string }) => e.field),
      ['tools.1.type'],
    );
    t.regex(res.body.error.errors[0].message, /web_search/);
    t.regex(res.body.error.fix, /responses: true/);
    t.is(vendor.count(), before);
  },
);

test.serial('responses refused before anything is sent: a stopped agent, a spent budget, a dry run', async (t) => {
  const agent = (await gw.owner.send('POST', '/agents', { name: 'resp-agent' })).body.id as string;
  const agentKey = (await gw.owner.send('POST', `/agents/${agent}/keys`, {})).body.key as string;
  await gw.owner.send('POST', `/agents/${agent}/stop`, { reason: 'runaway' });
  const before = vendor.count();
  const stopped = await post(agentKey, { model: 'small', input: 'hi' }, { 'x-svc-task-class': 'general' });
  assertError(t, stopped, 403, 'agent_stopped');
  t.regex(String(stopped.body.error.evidenceRecord), /^evr_/);

  const dry = await post(key, { model: 'small', input: 'hello', max_output_tokens: 10 }, { 'x-svc-dry-run': 'true' });
  t.is(dry.status, 200, dry.text);
  t.like(dry.body, { object: 'svc.dry_run', model: 'small' });
  // "hello": 1 token in (the tokenizer's count), 10 out, at 150,000 and 600,000 per million.
  t.is(dry.body.estimatedCostMicros, 7);

  const spender = await gw.key({ defaultTaskClass: 'general', team: 'resp-spent' });
  const made = await call(gw.server.url, 'POST', '/v1/admin/budgets', {
    headers: bearer(admin),
    json: { scope: { kind: 'team', id: 'resp-spent' }, amountMicros: 1, period: 'day' },
  });
  t.is(made.status, 201, made.text);
  t.is((await post(spender, { model: 'small', input: 'spend it' })).status, 200);
  const sentBefore = vendor.count();
  assertError(t, await post(spender, { model: 'small', input: 'again' }), 429, 'budget_exhausted');
  t.is(vendor.count(), sentBefore);
  t.is(sentBefore, before + 1, 'only the call within budget was sent');
});

test.serial('call records: the Responses route, tokens, cost and outcome', async (t) => {
  const recorder = await gw.key({ defaultTaskClass: 'general', principal: 'rita' });
  await gw.openai(recorder).responses.create({ model: 'small', input: 'record me' });
  const stream = gw.openai(recorder).responses.stream({ model: 'small', input: 'record me too' });
  await stream.finalResponse();
  await gw.server.app.services.calls.flush();
  const rows = (await gw.server.app.store.tables.calls.scan([gw.server.boot.workspaceId!]))
    .map((e) => e.value)
    .filter((c) => c.principal === 'rita');
  t.is(rows.length, 2);
  t.like(
    rows.find((r) => !r.stream),
    { shape: 'responses', stream: false, model: 'small', inputTokens: 2, outputTokens: 3, outcome: 'ok' },
  );
  t.like(
    rows.find((r) => r.stream),
    { shape: 'responses', stream: true, model: 'small', inputTokens: 3, outputTokens: 4, outcome: 'ok' },
  );
  t.true(rows.every((r) => r.costMicros > 0));
});

test.serial(
  'a stream cut midway ends with an error event, which the SDK raises; never failed over after',
  async (t) => {
    vendor.fault('small-2026', { kind: 'cut', afterChunks: 3 });
    const before = vendor.count();
    const res = await post(key, { model: 'small', input: 'one two three four five', stream: true });
    t.is(res.status, 200);
    const events = res.text.split('\n\n').filter(Boolean);
    t.regex(events.at(-1)!, /^event: error\ndata: \{"type":"error"/);
    t.false(res.text.includes('response.completed'));
    t.is(vendor.count(), before + 1, 'committed at the first event: not tried again');

    vendor.fault('small-2026', { kind: 'cut', afterChunks: 3 });
    const stream = gw.openai(key).responses.stream({ model: 'small', input: 'one two three four five' });
    await t.throwsAsync(async () => {
      for await (const _ of stream) {
        /* read until the error event */
      }
    });
  },
);
