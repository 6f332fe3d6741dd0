import test from 'ava';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { startGateway, user, type Gateway } from './support.js';

/**
 * Model traffic through the gateway with the official SDKs (issue 6): both shapes, streaming and
 * not, the same vendor shape and across translation; the steering answer headers; the vendor
 * sees its own secret and model name, never the client's key.
 */
let vendor: MockVendor;
let gw: Gateway;
let key: string;
let euKey: string;

test.before(async () => {
  vendor = await startMockVendor();
  gw = await startGateway(vendor);
  key = await gw.key({ defaultTaskClass: 'general' });
  euKey = await gw.key({ defaultTaskClass: 'general', policyProfile: 'eu-only' });
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
});

test.serial('OpenAI SDK, not streaming: routed to the cheapest model, with cost and steering headers', async (t) => {
  const { data, response } = await gw
    .openai(key)
    .chat.completions.create({ model: 'large', messages: user('hello there') })
    .withResponse();
  t.is(data.choices[0]?.message.content, 'echo: hello there');
  t.is(data.model, 'small', 'enforce mode routes by objective; the body names the model that served');
  t.deepEqual(data.usage, { prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 });
  const h = response.headers;
  t.is(h.get('x-svc-routed-to'), 'small');
  t.is(h.get('x-svc-enforcement'), 'observe');
  t.is(h.get('x-svc-jurisdiction'), 'US; us-east');
  // 2 input tokens at 150,000 and 3 output tokens at 600,000 micro-dollars per million: 2.1, rounded up.
  t.is(h.get('x-svc-cost-micros'), '3');
  t.regex(h.get('x-svc-call-id') ?? '', /^call_[0-9A-Za-z]{22}$/);
  t.regex(h.get('x-svc-task-id') ?? '', /^task_[0-9A-Za-z]{22}$/);
  t.truthy(h.get('x-svc-session'));
  t.regex(h.get('x-svc-overhead-micros') ?? '', /^\d+$/);
  const seen = vendor.calls.at(-1)!;
  t.is(seen.model, 'small-2026');
  t.is(
    seen.headers.authorization,
    'Bearer sk-mock-openai',
    "the vendor sees the operator's secret, not the client's key",
  );
  t.regex(String(seen.headers.traceparent), /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
});

test.serial('OpenAI SDK, streaming: the text arrives in pieces and whole, usage only when asked', async (t) => {
  const stream = await gw
    .openai(key)
    .chat.completions.create({ model: 'small', messages: user('stream me some words'), stream: true });
  let text = '';
  let usageSeen = false;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? '';
    if (chunk.usage) usageSeen = true;
  }
  t.is(text, 'echo: stream me some words');
  t.false(usageSeen, 'the client did not ask for usage, so the chunk the gateway asked for is not passed on');
  t.deepEqual(vendor.calls.at(-1)!.body.stream_options, { include_usage: true });

  const withUsage = await gw.openai(key).chat.completions.create({
    model: 'small',
    messages: user('count me'),
    stream: true,
    stream_options: { include_usage: true },
  });
  let usage: unknown = null;
  for await (const chunk of withUsage) if (chunk.usage) usage = chunk.usage;
  t.deepEqual(usage, { prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 });
});

test.serial('Anthropic SDK to an Anthropic-kind model (EU profile), streaming and not', async (t) => {
  const client = gw.anthropic(euKey);
  const { data, response } = await client.messages
    .create({ model: 'claude-eu', max_tokens: 100, messages: user('bonjour le monde') })
    .withResponse();
  t.deepEqual(data.content, [{ type: 'text', text: 'echo: bonjour le monde' }]);
  t.is(data.model, 'claude-eu');
  t.is(response.headers.get('x-svc-routed-to'), 'claude-eu');
  t.is(response.headers.get('x-svc-jurisdiction'), 'EU; eu-west');
  t.is(vendor.calls.at(-1)!.headers['x-api-key'], 'sk-mock-anthropic');

  const stream = client.messages.stream({ model: 'claude-eu', max_tokens: 100, messages: user('stream this please') });
  let text = '';
  stream.on('text', (piece) => {
    text += piece;
  });
  const final = await stream.finalMessage();
  t.is(text, 'echo: stream this please');
  t.is(final.usage.output_tokens, 4);
});

test.serial('across translation: the OpenAI SDK served by an Anthropic-kind model, and back', async (t) => {
  const viaAnthropic = await gw.openai(euKey).chat.completions.create({
    model: 'claude-eu',
    messages: [{ role: 'system', content: 'be kind' }, ...user('translate me')],
  });
  t.is(viaAnthropic.choices[0]?.message.content, 'echo: translate me');
  t.is(viaAnthropic.choices[0]?.finish_reason, 'stop');
  const sent = vendor.calls.at(-1)!;
  t.is(sent.vendor, 'anthropic');
  t.is(sent.body.system, 'be kind');
  t.is(sent.body.max_tokens, 4096, 'Anthropic needs max_tokens: the default is sent');

  let text = '';
  for await (const chunk of await gw
    .openai(euKey)
    .chat.completions.create({ model: 'claude-eu', messages: user('stream across'), stream: true })) {
    text += chunk.choices[0]?.delta.content ?? '';
  }
  t.is(text, 'echo: stream across');

  const viaOpenai = await gw
    .anthropic(key)
    .messages.create({ model: 'small', max_tokens: 50, system: 'short', messages: user('from anthropic') });
  t.deepEqual(viaOpenai.content, [{ type: 'text', text: 'echo: from anthropic' }]);
  t.is(viaOpenai.stop_reason, 'end_turn');
  t.is(vendor.calls.at(-1)!.vendor, 'openai');
  const stream = gw
    .anthropic(key)
    .messages.stream({ model: 'small', max_tokens: 50, messages: user('stream from anthropic') });
  let streamed = '';
  stream.on('text', (piece) => {
    streamed += piece;
  });
  const final = await stream.finalMessage();
  t.is(streamed, 'echo: stream from anthropic');
  t.deepEqual(final.usage.output_tokens, 4);
});

test.serial('tool calls survive translation both ways, streaming too', async (t) => {
  const tools = [
    {
      type: 'function' as const,
      function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } },
    },
  ];
  const res = await gw
    .openai(euKey)
    .chat.completions.create({ model: 'claude-eu', messages: user('please call tool now'), tools });
  t.is(res.choices[0]?.finish_reason, 'tool_calls');
  t.like(res.choices[0]?.message.tool_calls?.[0], {
    id: 'toolu_1',
    type: 'function',
    function: { name: 'lookup', arguments: '{"q":"x"}' },
  });
  const streamed = await gw
    .openai(euKey)
    .chat.completions.create({ model: 'claude-eu', messages: user('please call tool now'), tools, stream: true });
  let args = '';
  let name = '';
  for await (const chunk of streamed) {
    const call = chunk.choices[0]?.delta.tool_calls?.[0];
    if (call?.function?.name) name = call.function.name;
    args += call?.function?.arguments ?? '';
  }
  t.is(name, 'lookup');
  t.deepEqual(JSON.parse(args), { q: 'x' });

  const anth = await gw.anthropic(key).messages.create({
    model: 'small',
    max_tokens: 50,
    messages: user('please call tool now'),
    tools: [{ name: 'lookup', input_schema: { type: 'object', properties: { q: { type: 'string' } } } }],
  });
  t.is(anth.stop_reason, 'tool_use');
  t.like(anth.content[0], { type: 'tool_use', id: 'call_1', name: 'lookup', input: { q: 'x' } });
});

test.serial('a tool schema with a field named constructor reaches the vendor as it was sent', async (t) => {
  // Other routes remove `constructor` and `prototype` keys from a body; a model request is
  // forwarded, so its tools' schemas keep every field they name.
  const parameters = {
    type: 'object',
    properties: { constructor: { type: 'string' }, prototype: { type: 'string' } },
    required: ['constructor'],
  };
  await gw.openai(key).chat.completions.create({
    model: 'small',
    messages: user('build it'),
    tools: [{ type: 'function', function: { name: 'build', parameters } }],
  });
  const sent = vendor.calls.at(-1)!.body as { tools: Array<{ function: { parameters: unknown } }> };
  t.deepEqual(sent.tools[0]!.function.parameters, parameters);
});
