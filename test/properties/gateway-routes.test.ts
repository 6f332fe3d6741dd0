import test from 'ava';
import fc from 'fast-check';
import { PassThrough } from 'node:stream';
import type { Server } from '@hapi/hapi';
import { responsesPassThrough, translateStream } from '../../src/gateway/responses/attempt.js';
import { SseReader, type SseEvent } from '../../src/gateway/sse.js';
import { chatToResponsesStream } from '../../src/gateway/translate/responses-api.js';
import type { Json } from '../helpers/http.js';
import { inProcessServer, type InProcess } from '../helpers/in-process.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';

/**
 * The routes of issue 19 under arbitrary bodies, through the real gateway (server.inject) to the
 * mock vendor (an OpenAI-kind provider asked in chat completions, one that speaks Responses, an
 * Anthropic-kind one, and an embedding model): POST /v1/responses, /v1/embeddings and
 * /v1/messages/count_tokens answer 200 or a 4xx of their shape, never a 5xx, a crash or a hang.
 * And the new stream readers under any chunking: the Responses events rebuilt from chat chunks
 * carry the text whole and in order, and a vendor's Responses events pass through byte for byte.
 */
let running: InProcess;
let server: Server;
let vendor: MockVendor;
let key: string;

const model = (id: string, provider: string, taskClasses = ['*']) => ({
  id,
  provider,
  upstreamModel: `${id}-1`,
  priceMicrosPerMTokIn: 1,
  priceMicrosPerMTokOut: 1,
  jurisdiction: { domicile: 'US', region: 'x' },
  taskClasses,
});

test.before(async () => {
  vendor = await startMockVendor();
  running = await inProcessServer(
    {
      'gateway.enforcement': 'enforce',
      'gateway.providers': [
        { id: 'o', kind: 'openai', baseUrl: vendor.openaiBase, apiKeyEnv: 'O_KEY' },
        { id: 'r', kind: 'openai', baseUrl: vendor.openaiBase, apiKeyEnv: 'O_KEY', responses: true },
        { id: 'a', kind: 'anthropic', baseUrl: vendor.anthropicBase, apiKeyEnv: 'A_KEY' },
      ],
      'gateway.models': [model('m', 'o'), model('r', 'r'), model('a', 'a'), model('e', 'o', ['embedding'])],
    },
    { O_KEY: 'sk-mock-openai', A_KEY: 'sk-mock-anthropic' },
  );
  const { workspaceId } = await running.app.services.people.createWorkspace({
    name: 'P',
    ownerEmail: 'p@example.com',
    ownerPassword: 'correct horse battery',
  });
  key = (
    await running.app.services.keys.mint(
      workspaceId,
      { scope: 'inference', defaultTaskClass: 'general' } as never,
      'test',
    )
  ).key;
  server = running.http.server;
  await server.initialize();
});

test.after.always(async () => {
  await running?.close();
  await vendor?.close();
});

const text = fc.string({ unit: 'binary', maxLength: 30 }).filter((s) => s.isWellFormed());
const anything = fc.oneof(text, fc.integer(), fc.boolean(), fc.constant(null), fc.array(text, { maxLength: 2 }));

const part = fc.record(
  {
    type: fc.constantFrom('input_text', 'output_text', 'input_image', 'refusal', 'input_audio', 'input_file', 7),
    text: fc.option(text),
    image_url: fc.option(text),
    refusal: fc.option(text),
    file_id: fc.option(text),
  },
  { requiredKeys: ['type'] },
);
const item = fc.oneof(
  fc.record(
    {
      type: fc.option(fc.constantFrom('message', 'web_search_call', 'item_reference')),
      role: fc.constantFrom('user', 'assistant', 'system', 'developer', 'tool', 'robot'),
      content: fc.oneof(text, fc.array(part, { maxLength: 3 }), anything),
    },
    { requiredKeys: ['role'] },
  ),
  fc.record(
    {
      type: fc.constant('function_call'),
      call_id: fc.oneof(text, anything),
      name: fc.oneof(text, anything),
      arguments: fc.oneof(text, fc.constant('{"q":1}'), anything),
    },
    { requiredKeys: ['type'] },
  ),
  fc.record(
    {
      type: fc.constant('function_call_output'),
      call_id: fc.oneof(text, anything),
      output: fc.oneof(text, fc.array(part, { maxLength: 2 }), anything),
    },
    { requiredKeys: ['type'] },
  ),
  fc.record({ type: fc.constant('reasoning'), summary: fc.array(anything, { maxLength: 2 }) }),
);
const responsesExtras = fc.record(
  {
    instructions: fc.oneof(text, anything),
    tools: fc.array(
      fc.record(
        {
          type: fc.constantFrom('function', 'web_search', 'file_search'),
          name: fc.oneof(fc.constantFrom('lookup', 'f'), text),
          parameters: fc.option(fc.constant({ type: 'object', properties: {} })),
        },
        { requiredKeys: ['type'] },
      ),
      { maxLength: 2 },
    ),
    tool_choice: fc.oneof(fc.constantFrom('auto', 'none', 'required', 'sometimes'), fc.record({ type: text })),
    max_output_tokens: fc.oneof(fc.integer({ min: -1, max: 40 }), fc.constant(null)),
    metadata: fc.oneof(fc.dictionary(text, text, { maxKeys: 3 }), anything),
    stream: fc.oneof(fc.boolean(), fc.constant('yes')),
    store: fc.oneof(fc.boolean(), anything),
    previous_response_id: fc.oneof(text, fc.constant(null)),
    background: fc.boolean(),
    temperature: fc.double({ noNaN: true }),
    text: fc.oneof(fc.constant({ format: { type: 'json_schema', name: 'x', schema: {} } }), anything),
  },
  { requiredKeys: [] },
);

function wellFormed(status: number, body: Json, envelope: boolean): boolean {
  if (status === 200) return true;
  const error = envelope ? (body?.type === 'error' ? body.error : undefined) : body?.error;
  return (
    status >= 400 &&
    status < 500 &&
    typeof error?.type === 'string' &&
    typeof error.fix === 'string' &&
    typeof error.requestId === 'string'
  );
}

const eventsOf = (payload: string): SseEvent[] => new SseReader().push(payload);

test('POST /v1/responses: any body gives 200 (a whole event stream when streamed) or a 4xx', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(text, fc.array(item, { maxLength: 4 }), anything),
      responsesExtras,
      fc.constantFrom('m', 'r', 'a', 'nope', 7),
      async (input, extra, name) => {
        const res = await server.inject({
          method: 'POST',
          url: '/v1/responses',
          headers: { authorization: `Bearer ${key}` },
          payload: JSON.stringify({ model: name, input, ...extra }),
        });
        if (res.headers['content-type']?.toString().startsWith('text/event-stream')) {
          const last = eventsOf(res.payload).at(-1);
          return res.statusCode === 200 && ['response.completed', 'response.incomplete'].includes(last?.event ?? '');
        }
        return wellFormed(res.statusCode, JSON.parse(res.payload), false);
      },
    ),
    { numRuns: 150 },
  );
  t.pass();
});

test('POST /v1/embeddings: any body gives 200 or a 4xx', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        text,
        fc.array(text, { maxLength: 3 }),
        fc.array(fc.integer({ min: -1, max: 100 }), { maxLength: 3 }),
        fc.array(fc.array(fc.integer({ min: 0, max: 9 }), { maxLength: 2 }), { maxLength: 2 }),
        anything,
      ),
      fc.record(
        {
          dimensions: fc.oneof(fc.integer({ min: -1, max: 20 }), anything),
          encoding_format: fc.constantFrom('float', 'base64', 'int8'),
          model: fc.constantFrom('e', 'm', 'nope'),
        },
        { requiredKeys: [] },
      ),
      async (input, extra) => {
        const res = await server.inject({
          method: 'POST',
          url: '/v1/embeddings',
          headers: { authorization: `Bearer ${key}` },
          payload: JSON.stringify({ input, ...extra }),
        });
        return wellFormed(res.statusCode, JSON.parse(res.payload), false);
      },
    ),
    { numRuns: 120 },
  );
  t.pass();
});

test("POST /v1/messages/count_tokens: any body gives 200 or a 4xx in Anthropic's envelope", async (t) => {
  const block = fc.record(
    {
      type: fc.constantFrom('text', 'image', 'tool_use', 'tool_result', 'thinking', 'weird'),
      text: fc.option(text),
      input: fc.option(anything),
      content: fc.option(fc.oneof(text, fc.array(fc.record({ type: fc.constant('text'), text }), { maxLength: 2 }))),
    },
    { requiredKeys: ['type'] },
  );
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.record({
          role: fc.constantFrom('user', 'assistant', 'system'),
          content: fc.oneof(text, fc.array(block, { maxLength: 3 }), anything),
        }),
        { maxLength: 3 },
      ),
      fc.oneof(text, fc.array(block, { maxLength: 2 }), anything),
      fc.constantFrom('m', 'a', 'nope'),
      fc.constantFrom('', '?beta=true', '?beta=no'),
      async (messages, system, name, query) => {
        const res = await server.inject({
          method: 'POST',
          url: `/v1/messages/count_tokens${query}`,
          headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' },
          payload: JSON.stringify({ model: name, messages, system }),
        });
        const body = JSON.parse(res.payload);
        if (res.statusCode === 200) return Number.isInteger(body.input_tokens) && body.input_tokens >= 0;
        return wellFormed(res.statusCode, body, true);
      },
    ),
    { numRuns: 120 },
  );
  t.pass();
});

/** Splits `bytes` at the given cut points (any of them, in any order). */
const chunked = (bytes: string, cuts: number[]): string[] => {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: string[] = [];
  let from = 0;
  for (const c of at) {
    out.push(bytes.slice(from, c));
    from = c;
  }
  out.push(bytes.slice(from));
  return out.filter((c) => c !== '');
};

const chatChunk = (delta: Json, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  let s = '';
  for await (const c of stream) s += String(c);
  return s;
}

test('chat chunks as Responses events, under any chunking: text and arguments whole, in order, then completed', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(text, { maxLength: 5 }),
      fc.array(fc.constantFrom('{"a":', '1', '}', ''), { maxLength: 4 }),
      fc.array(fc.nat(), { maxLength: 8 }),
      fc.boolean(),
      async (pieces, args, cuts, crlf) => {
        let bytes = chatChunk({ role: 'assistant', content: '' });
        for (const p of pieces) bytes += chatChunk({ content: p });
        if (args.length > 0) {
          bytes += chatChunk({ tool_calls: [{ index: 0, id: 'call_9', function: { name: 'f', arguments: '' } }] });
          for (const a of args) bytes += chatChunk({ tool_calls: [{ index: 0, function: { arguments: a } }] });
        }
        bytes += chatChunk({}, args.length > 0 ? 'tool_calls' : 'stop');
        bytes += `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 4 } })}\n\n`;
        bytes += 'data: [DONE]\n\n';
        if (crlf) bytes = bytes.replaceAll('\n', '\r\n');
        const source = new PassThrough();
        const out = translateStream(
          source,
          chatToResponsesStream({ model: 'x' }, { id: 'i', model: 'x', createdAt: 1 }),
        );
        // Cut as bytes arrive: anywhere, inside a UTF-8 sequence too.
        const raw = Buffer.from(bytes);
        let from = 0;
        for (const c of [...new Set(cuts.map((n) => n % (raw.length + 1)))].sort((x, y) => x - y)) {
          source.write(raw.subarray(from, c));
          from = c;
        }
        source.end(raw.subarray(from));
        const events = eventsOf(await readAll(out)).map((e) => JSON.parse(e.data) as Json);
        const textOut = events
          .filter((e) => e.type === 'response.output_text.delta')
          .map((e) => e.delta)
          .join('');
        const argsOut = events
          .filter((e) => e.type === 'response.function_call_arguments.delta')
          .map((e) => e.delta)
          .join('');
        const last = events.at(-1)!;
        return (
          textOut === pieces.join('') &&
          argsOut === args.join('') &&
          events.every((e, i) => e.sequence_number === i) &&
          last.type === 'response.completed' &&
          last.response.usage.input_tokens === 3
        );
      },
    ),
    { numRuns: 200 },
  );
  t.pass();
});

test('chat bytes of any kind as Responses events: never a throw, and the stream ends (completed or error)', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.oneof(text, fc.constantFrom('data: ', '\n\n', '[DONE]', '{"choices":[{')), { maxLength: 12 }),
      async (parts) => {
        const source = new PassThrough();
        const out = translateStream(
          source,
          chatToResponsesStream({ model: 'x' }, { id: 'i', model: 'x', createdAt: 1 }),
        );
        for (const p of parts) source.write(p);
        source.end();
        const events = eventsOf(await readAll(out));
        const last = events.at(-1)?.event;
        return events.length === 0 ? false : last === 'response.completed' || last === 'error';
      },
    ),
    { numRuns: 200 },
  );
  t.pass();
});

test("a vendor's Responses events pass through byte for byte under any chunking, usage kept from the last", (t) => {
  const event = (type: string, data: Json) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  fc.assert(
    fc.property(fc.array(text, { maxLength: 4 }), fc.array(fc.nat(), { maxLength: 8 }), (pieces, cuts) => {
      let bytes = event('response.created', { response: { id: 'r', model: 'same', output: [] } });
      for (const p of pieces) bytes += event('response.output_text.delta', { delta: p });
      bytes += event('response.completed', {
        response: { id: 'r', model: 'same', usage: { input_tokens: 5, output_tokens: 6 } },
      });
      const tr = responsesPassThrough('same', 'same');
      const reader = new SseReader();
      let out = '';
      for (const c of chunked(bytes, cuts)) for (const e of reader.push(c)) out += tr.event(e);
      return out === bytes && tr.finished && tr.usage?.input === 5 && tr.usage.output === 6;
    }),
    { numRuns: 200 },
  );
  t.pass();
});
