import test from 'ava';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { poll } from '../helpers/wait.js';

/** An error answer in the vendors' shapes: `{ error: { type, message, param? } }`. */
interface VendorError {
  error: { type: string; message: unknown; param?: unknown };
}

// The mock is driven through the vendors' official SDKs, so its shapes are checked by the same
// parsers a real client uses. Each test owns its model names, so faults (keyed by model) never
// leak between tests that run at the same time on the shared vendor; the test that resets the
// vendor starts its own.

let vendor: MockVendor;
let openai: OpenAI;
let anthropic: Anthropic;

test.before(async () => {
  vendor = await startMockVendor();
  openai = new OpenAI({ apiKey: 'sk-mock-openai', baseURL: vendor.openaiBase, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: 'sk-mock-anthropic', baseURL: vendor.anthropicBase, maxRetries: 0 });
});

test.after.always(async () => {
  await vendor?.close();
});

const user = (content: string) => [{ role: 'user' as const, content }];
const openaiTool = {
  type: 'function' as const,
  function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } },
};
const anthropicTool = {
  name: 'lookup',
  input_schema: { type: 'object' as const, properties: { q: { type: 'string' } } },
};

test('openai: a non-streaming answer echoes the last user message with word-count usage', async (t) => {
  const res = await openai.chat.completions.create({
    model: 'gpt-plain',
    messages: [
      { role: 'system', content: 'be brief' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'hello' },
          { type: 'text', text: 'big world' },
        ],
      },
    ],
  });
  t.is(res.object, 'chat.completion');
  t.is(res.model, 'gpt-plain');
  t.true(res.id.startsWith('chatcmpl-'));
  t.deepEqual(res.choices[0]?.message, { role: 'assistant', content: 'echo: hello big world' });
  t.is(res.choices[0]?.finish_reason, 'stop');
  t.deepEqual(res.usage, { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 });
});

test('openai: the stream concatenates to the non-streaming text and ends with usage', async (t) => {
  const messages = user('the  quick\nbrown fox');
  const plain = await openai.chat.completions.create({ model: 'gpt-stream', messages });
  const stream = await openai.chat.completions.create({
    model: 'gpt-stream',
    messages,
    stream: true,
    stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  t.deepEqual(chunks[0]?.choices[0]?.delta, { role: 'assistant', content: '' });
  const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
  t.is(text, 'echo: the  quick\nbrown fox');
  t.is(plain.choices[0]?.message.content, text);
  // role, one per word (5), finish, usage.
  t.is(chunks.length, 8);
  t.is(chunks.at(-2)?.choices[0]?.finish_reason, 'stop');
  t.deepEqual(chunks.at(-1)?.choices, []);
  t.deepEqual(chunks.at(-1)?.usage, plain.usage);
  t.deepEqual(plain.usage, { prompt_tokens: 4, completion_tokens: 5, total_tokens: 9 });
});

test('openai: tool calls, plain and streamed, and a text answer after the tool result', async (t) => {
  const messages = user('please call tool now');
  const plain = await openai.chat.completions.create({ model: 'gpt-tools', messages, tools: [openaiTool] });
  t.is(plain.choices[0]?.finish_reason, 'tool_calls');
  t.is(plain.choices[0]?.message.content, null);
  t.deepEqual(plain.choices[0]?.message.tool_calls, [
    { id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } },
  ]);
  t.is(plain.usage?.completion_tokens, 5);

  const streamed = await openai.chat.completions
    .stream({ model: 'gpt-tools', messages, tools: [openaiTool] })
    .finalChatCompletion();
  t.is(streamed.choices[0]?.finish_reason, 'tool_calls');
  t.is(streamed.choices[0]?.message.tool_calls?.length, 1);
  t.like(streamed.choices[0]?.message.tool_calls?.[0], {
    id: 'call_1',
    type: 'function',
    function: { name: 'lookup', arguments: '{"q":"x"}' },
  });

  const after = await openai.chat.completions.create({
    model: 'gpt-tools',
    tools: [openaiTool],
    messages: [...messages, plain.choices[0]!.message, { role: 'tool', tool_call_id: 'call_1', content: 'result' }],
  });
  t.is(after.choices[0]?.finish_reason, 'stop');
  t.is(after.choices[0]?.message.content, 'echo: please call tool now');
});

test('openai: max tokens truncates the reply, plain and streamed', async (t) => {
  const plain = await openai.chat.completions.create({
    model: 'gpt-short',
    messages: user('one two three'),
    max_completion_tokens: 2,
  });
  t.is(plain.choices[0]?.message.content, 'echo: one');
  t.is(plain.choices[0]?.finish_reason, 'length');
  t.is(plain.usage?.completion_tokens, 2);
  const stream = await openai.chat.completions.create({
    model: 'gpt-short',
    messages: user('one two three'),
    max_tokens: 3,
    stream: true,
  });
  let text = '';
  let finish: string | null | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  t.is(text, 'echo: one two');
  t.is(finish, 'length');
});

test('openai: a wrong key is the SDK AuthenticationError', async (t) => {
  const wrong = new OpenAI({ apiKey: 'sk-wrong', baseURL: vendor.openaiBase, maxRetries: 0 });
  const error = await t.throwsAsync(wrong.chat.completions.create({ model: 'gpt-auth', messages: user('hi') }), {
    instanceOf: OpenAI.AuthenticationError,
  });
  t.is(error?.code, 'invalid_api_key');
  t.is(error?.type, 'invalid_request_error');
});

test('anthropic: a non-streaming answer echoes the last user message with word-count usage', async (t) => {
  const res = await anthropic.messages.create({
    model: 'claude-plain',
    max_tokens: 100,
    system: [{ type: 'text', text: 'be brief' }],
    messages: [{ role: 'user', content: [{ type: 'text', text: 'hello big world' }] }],
  });
  t.is(res.type, 'message');
  t.is(res.model, 'claude-plain');
  t.true(res.id.startsWith('msg_'));
  t.deepEqual(res.content as unknown, [{ type: 'text', text: 'echo: hello big world' }]);
  t.is(res.stop_reason, 'end_turn');
  t.is(res.stop_sequence, null);
  t.deepEqual(res.usage as unknown, { input_tokens: 5, output_tokens: 4 });
});

test('anthropic: the stream concatenates to the non-streaming text and its final message has usage', async (t) => {
  const params = { model: 'claude-stream', max_tokens: 100, system: 'be brief', messages: user('the quick brown fox') };
  const plain = await anthropic.messages.create(params);
  const events: string[] = [];
  let text = '';
  const stream = anthropic.messages.stream(params);
  stream.on('streamEvent', (event) => events.push(event.type));
  stream.on('text', (delta) => {
    text += delta;
  });
  const final = await stream.finalMessage();
  t.is(text, 'echo: the quick brown fox');
  t.deepEqual(final.content, plain.content);
  t.is(final.stop_reason, 'end_turn');
  t.is(final.usage.input_tokens, 6);
  t.is(final.usage.output_tokens, 5);
  t.deepEqual(final.usage, plain.usage);
  // The SDK drops pings, so they are counted on the wire.
  t.deepEqual(events, [
    'message_start',
    'content_block_start',
    ...Array(5).fill('content_block_delta'),
    'content_block_stop',
    'message_delta',
    'message_stop',
  ]);
  const wire = await fetch(`${vendor.anthropicBase}/v1/messages`, {
    method: 'POST',
    headers: {
      'x-api-key': 'sk-mock-anthropic',
      'anthropic-version': '2023-06-01',
      'content-type': 'application/json',
    },
    body: JSON.stringify({ ...params, stream: true }),
  });
  t.is(wire.headers.get('content-type'), 'text/event-stream');
  const names = [...(await wire.text()).matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
  t.deepEqual(names.slice(0, 4), ['message_start', 'content_block_start', 'ping', 'content_block_delta']);
});

test('anthropic: tool use, plain and streamed', async (t) => {
  const params = { model: 'claude-tools', max_tokens: 100, messages: user('call tool please'), tools: [anthropicTool] };
  const plain = await anthropic.messages.create(params);
  t.is(plain.stop_reason, 'tool_use');
  t.deepEqual(plain.content as unknown, [{ type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: 'x' } }]);
  t.is(plain.usage.output_tokens, 5);
  const streamed = await anthropic.messages.stream(params).finalMessage();
  t.is(streamed.stop_reason, 'tool_use');
  t.like(streamed.content[0], { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: 'x' } });
});

test('anthropic: max_tokens truncates the reply, plain and streamed', async (t) => {
  const params = { model: 'claude-short', max_tokens: 2, messages: user('one two three') };
  const plain = await anthropic.messages.create(params);
  t.deepEqual(plain.content as unknown, [{ type: 'text', text: 'echo: one' }]);
  t.is(plain.stop_reason, 'max_tokens');
  const streamed = await anthropic.messages.stream(params).finalMessage();
  t.deepEqual(streamed.content, plain.content);
  t.is(streamed.stop_reason, 'max_tokens');
  t.is(streamed.usage.output_tokens, 2);
});

test('anthropic: a wrong key is the SDK AuthenticationError; a missing version header is a 400', async (t) => {
  const wrong = new Anthropic({ apiKey: 'sk-wrong', baseURL: vendor.anthropicBase, maxRetries: 0 });
  const error = await t.throwsAsync(
    wrong.messages.create({ model: 'claude-auth', max_tokens: 5, messages: user('hi') }),
    { instanceOf: Anthropic.AuthenticationError },
  );
  t.deepEqual(error?.error, { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } });

  const res = await fetch(`${vendor.anthropicBase}/v1/messages`, {
    method: 'POST',
    headers: { authorization: 'Bearer sk-mock-anthropic', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'claude-auth', max_tokens: 5, messages: user('hi') }),
  });
  t.is(res.status, 400);
  t.is(((await res.json()) as VendorError).error.type, 'invalid_request_error');
});

test('malformed bodies, missing fields and unknown routes are answered in the vendor shapes', async (t) => {
  const post = (path: string, body: string, headers: Record<string, string>) =>
    fetch(vendor.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const broken = await post('/v1/chat/completions', '{not json', { authorization: 'Bearer sk-mock-openai' });
  t.is(broken.status, 400);
  t.is(((await broken.json()) as VendorError).error.type, 'invalid_request_error');

  const noModel = await post('/v1/chat/completions', JSON.stringify({ messages: user('hi') }), {
    authorization: 'Bearer sk-mock-openai',
  });
  t.is(noModel.status, 400);
  t.is(((await noModel.json()) as VendorError).error.param, 'model');

  const noMax = await post('/v1/messages', JSON.stringify({ model: 'claude-shape', messages: user('hi') }), {
    'x-api-key': 'sk-mock-anthropic',
    'anthropic-version': '2023-06-01',
  });
  t.is(noMax.status, 400);
  t.like(await noMax.json(), { type: 'error', error: { type: 'invalid_request_error' } });

  const missing = await fetch(`${vendor.url}/v1/models`);
  t.is(missing.status, 404);
  t.is(typeof ((await missing.json()) as VendorError).error.message, 'string');
});

test('status faults: 500 and 429 with retry-after reach the SDK, in vendor shapes, for `times` requests', async (t) => {
  vendor.fault('gpt-500', { kind: 'status', status: 500 }, 2);
  for (let i = 0; i < 2; i++) {
    const error = await t.throwsAsync(openai.chat.completions.create({ model: 'gpt-500', messages: user('hi') }), {
      instanceOf: OpenAI.APIError,
    });
    t.is(error?.status, 500);
    t.is(error?.type, 'server_error');
  }
  t.is(
    (await openai.chat.completions.create({ model: 'gpt-500', messages: user('hi') })).choices[0]?.message.content,
    'echo: hi',
  );

  vendor.fault('gpt-429', { kind: 'status', status: 429, retryAfterSeconds: 7 });
  const limited = await t.throwsAsync(openai.chat.completions.create({ model: 'gpt-429', messages: user('hi') }), {
    instanceOf: OpenAI.RateLimitError,
  });
  t.is(limited?.status, 429);
  t.is(limited?.headers?.get('retry-after'), '7');
  t.is(limited?.code, 'rate_limit_exceeded');

  vendor.fault('claude-429', { kind: 'status', status: 429, retryAfterSeconds: 3 });
  const claudeLimited = await t.throwsAsync(
    anthropic.messages.create({ model: 'claude-429', max_tokens: 5, messages: user('hi') }),
    { instanceOf: Anthropic.APIError },
  );
  t.is(claudeLimited?.status, 429);
  t.is(claudeLimited?.headers?.get('retry-after'), '3');
  t.like(claudeLimited?.error, { type: 'error', error: { type: 'rate_limit_error' } });

  vendor.fault('claude-529', { kind: 'status', status: 529 }, Infinity);
  for (let i = 0; i < 3; i++) {
    const overloaded = await t.throwsAsync(
      anthropic.messages.create({ model: 'claude-529', max_tokens: 5, messages: user('hi') }),
      { instanceOf: Anthropic.APIError },
    );
    t.is(overloaded?.status, 529);
    t.like(overloaded?.error, { error: { type: 'overloaded_error' } });
  }
  vendor.fault('claude-500', { kind: 'status', status: 500 });
  const internal = await t.throwsAsync(
    anthropic.messages.create({ model: 'claude-500', max_tokens: 5, messages: user('hi') }),
    { instanceOf: Anthropic.InternalServerError },
  );
  t.like(internal?.error, { error: { type: 'api_error' } });
});

// Timing tests run serially (ava runs them before the concurrent ones) so load cannot skew them.
test.serial('hang: the request is held until the client times out', async (t) => {
  vendor.fault('gpt-hang', { kind: 'hang' });
  const impatient = new OpenAI({ apiKey: 'sk-mock-openai', baseURL: vendor.openaiBase, maxRetries: 0, timeout: 300 });
  const started = Date.now();
  await t.throwsAsync(impatient.chat.completions.create({ model: 'gpt-hang', messages: user('hi') }), {
    instanceOf: OpenAI.APIConnectionTimeoutError,
  });
  t.true(Date.now() - started >= 290);
  t.is(vendor.count('gpt-hang'), 1);
  // The fault was used up: the next request is answered.
  t.is(
    (await impatient.chat.completions.create({ model: 'gpt-hang', messages: user('hi') })).choices[0]?.message.content,
    'echo: hi',
  );
});

test('reset: the socket is destroyed without an answer, a connection error in both SDKs', async (t) => {
  vendor.fault('gpt-reset', { kind: 'reset' });
  const error = await t.throwsAsync(openai.chat.completions.create({ model: 'gpt-reset', messages: user('hi') }), {
    instanceOf: OpenAI.APIConnectionError,
  });
  t.false(error instanceof OpenAI.APIConnectionTimeoutError);
  vendor.fault('claude-reset', { kind: 'reset' });
  await t.throwsAsync(anthropic.messages.create({ model: 'claude-reset', max_tokens: 5, messages: user('hi') }), {
    instanceOf: Anthropic.APIConnectionError,
  });
  // A cut on a non-streaming request is a reset.
  vendor.fault('gpt-cut-plain', { kind: 'cut', afterChunks: 2 });
  await t.throwsAsync(openai.chat.completions.create({ model: 'gpt-cut-plain', messages: user('hi') }), {
    instanceOf: OpenAI.APIConnectionError,
  });
});

test('cut: stream iteration throws after the events sent before the cut', async (t) => {
  vendor.fault('gpt-cut', { kind: 'cut', afterChunks: 3 });
  const stream = await openai.chat.completions.create({
    model: 'gpt-cut',
    messages: user('a b c d e f'),
    stream: true,
  });
  const chunks: unknown[] = [];
  await t.throwsAsync(async () => {
    for await (const chunk of stream) chunks.push(chunk);
  });
  t.true(chunks.length >= 1 && chunks.length <= 3, `got ${chunks.length} chunks`);

  vendor.fault('claude-cut', { kind: 'cut', afterChunks: 4 });
  const events: string[] = [];
  const claudeStream = await anthropic.messages.create({
    model: 'claude-cut',
    max_tokens: 50,
    messages: user('a b c d e f'),
    stream: true,
  });
  await t.throwsAsync(async () => {
    for await (const event of claudeStream) events.push(event.type);
  });
  t.true(events.length >= 1 && events.length <= 4, `got ${events.join(',')}`);
  t.false(events.includes('message_stop'));
});

test.serial('delay: the answer comes, normally, after the delay', async (t) => {
  vendor.fault('claude-slow', { kind: 'delay', ms: 150 });
  const started = Date.now();
  const res = await anthropic.messages.create({ model: 'claude-slow', max_tokens: 5, messages: user('hi') });
  t.true(Date.now() - started >= 140);
  t.deepEqual(res.content as unknown, [{ type: 'text', text: 'echo: hi' }]);
});

test('calls and count record every request with its model, stream flag and traceparent', async (t) => {
  const own = await startMockVendor({ openaiKey: 'sk-own', anthropicKey: 'sk-own-claude' });
  t.teardown(() => own.close());
  const client = new OpenAI({ apiKey: 'sk-own', baseURL: own.openaiBase, maxRetries: 0 });
  const claude = new Anthropic({ apiKey: 'sk-own-claude', baseURL: own.anthropicBase, maxRetries: 0 });
  const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

  own.fault('gpt-rec', { kind: 'status', status: 503 });
  await t.throwsAsync(client.chat.completions.create({ model: 'gpt-rec', messages: user('hi') }));
  await client.chat.completions.create({ model: 'gpt-rec', messages: user('hi') }, { headers: { traceparent } });
  await claude.messages.stream({ model: 'claude-rec', max_tokens: 5, messages: user('hi') }).finalMessage();

  t.is(own.count(), 3);
  t.is(own.count('gpt-rec'), 2);
  t.is(own.count('claude-rec'), 1);
  t.is(own.count('nobody'), 0);
  t.deepEqual(
    own.calls.map(({ vendor: v, path, model, stream }) => ({ v, path, model, stream })),
    [
      { v: 'openai', path: '/v1/chat/completions', model: 'gpt-rec', stream: false },
      { v: 'openai', path: '/v1/chat/completions', model: 'gpt-rec', stream: false },
      { v: 'anthropic', path: '/v1/messages', model: 'claude-rec', stream: true },
    ],
  );
  t.is(own.calls[0]?.headers.traceparent, undefined);
  t.is(own.calls[1]?.headers.traceparent, traceparent);
  t.is(own.calls[1]?.headers.authorization, 'Bearer sk-own');
  t.deepEqual(own.calls[1]?.body.messages, user('hi'));
  // This SDK version sends its key as a bearer token; x-api-key is covered on the wire above.
  t.is(own.calls[2]?.headers.authorization, 'Bearer sk-own-claude');

  own.fault('gpt-rec', { kind: 'reset' }, Infinity);
  const held = own.calls;
  own.reset();
  t.is(own.count(), 0);
  t.is(held.length, 0);
  t.is(
    (await client.chat.completions.create({ model: 'gpt-rec', messages: user('again') })).choices[0]?.message.content,
    'echo: again',
  );
  t.is(own.count('gpt-rec'), 1);
});

test.serial('close does not wait for a hung request and ends it for the client', async (t) => {
  const own = await startMockVendor();
  const client = new OpenAI({ apiKey: 'sk-mock-openai', baseURL: own.openaiBase, maxRetries: 0 });
  own.fault('gpt-held', { kind: 'hang' });
  const pending = client.chat.completions.create({ model: 'gpt-held', messages: user('hi') });
  pending.catch(() => {});
  await poll(
    () => own.count('gpt-held'),
    (n) => n > 0,
    { everyMs: 5 },
  );
  const started = Date.now();
  await own.close();
  t.true(Date.now() - started < 1000);
  await t.throwsAsync(pending, { instanceOf: OpenAI.APIConnectionError });
});
