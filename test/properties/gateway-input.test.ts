import test from 'ava';
import fc from 'fast-check';
import type { Server } from '@hapi/hapi';
import type { Json } from '../helpers/http.js';
import { inProcessServer, type InProcess } from '../helpers/in-process.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';

/**
 * Arbitrary model requests through the real gateway (server.inject) to the mock vendor, in both
 * shapes, streaming or not: the answer is a 200 or a 4xx of the documented error shape (in Anthropic's
 * envelope on /v1/messages), never a 5xx, a crash or a hang.
 */
let running: InProcess;
let server: Server;
let vendor: MockVendor;
let key: string;

test.before(async () => {
  vendor = await startMockVendor();
  running = await inProcessServer(
    {
      'gateway.enforcement': 'enforce',
      'gateway.providers': [{ id: 'o', kind: 'openai', baseUrl: vendor.openaiBase, apiKeyEnv: 'VENDOR_KEY' }],
      'gateway.models': [
        {
          id: 'm',
          provider: 'o',
          upstreamModel: 'm-1',
          priceMicrosPerMTokIn: 1,
          priceMicrosPerMTokOut: 1,
          jurisdiction: { domicile: 'US', region: 'x' },
        },
      ],
    },
    { VENDOR_KEY: 'sk-mock-openai' },
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

const text = fc.string({ unit: 'binary', maxLength: 40 }).filter((s) => s.isWellFormed());
const part = fc.oneof(
  fc.record({ type: fc.constant('text'), text }),
  fc.record(
    {
      type: fc.constantFrom('image_url', 'image', 'tool_result', 'weird'),
      text: fc.option(text),
      image_url: fc.option(fc.record({ url: text })),
    },
    { requiredKeys: ['type'] },
  ),
);
const content = fc.oneof(text, fc.array(part, { maxLength: 3 }), fc.constant(null));
const openaiMessage = fc.record(
  {
    role: fc.constantFrom('system', 'user', 'assistant', 'tool', 'developer', 'robot'),
    content,
    tool_call_id: fc.option(text),
  },
  { requiredKeys: ['role'] },
);
const anthropicMessage = fc.record({ role: fc.constantFrom('user', 'assistant', 'system'), content });
const extras = fc.record(
  {
    stream: fc.oneof(fc.boolean(), fc.constant('yes')),
    max_tokens: fc.oneof(fc.integer({ min: -2, max: 50 }), fc.constant(null)),
    temperature: fc.double({ noNaN: true }),
    tools: fc.array(fc.record({ type: fc.constant('function'), function: fc.record({ name: text }) }), {
      maxLength: 2,
    }),
    stop: fc.oneof(text, fc.array(text, { maxLength: 2 })),
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

test('POST /v1/chat/completions: any body gives 200 or a 4xx of the documented error shape', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(openaiMessage, { maxLength: 4 }),
      extras,
      fc.constantFrom('m', 'other', 7),
      async (messages, extra, model) => {
        const res = await server.inject({
          method: 'POST',
          url: '/v1/chat/completions',
          headers: { authorization: `Bearer ${key}` },
          payload: JSON.stringify({ model, messages, ...extra }),
        });
        const body = res.headers['content-type']?.toString().startsWith('text/event-stream')
          ? {}
          : JSON.parse(res.payload);
        return wellFormed(res.statusCode, body, false);
      },
    ),
    { numRuns: 120 },
  );
  t.pass();
});

test("POST /v1/messages: any body gives 200 or a 4xx in Anthropic's envelope", async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(anthropicMessage, { maxLength: 4 }),
      extras,
      fc.oneof(text, fc.array(part, { maxLength: 2 })),
      async (messages, extra, system) => {
        const res = await server.inject({
          method: 'POST',
          url: '/v1/messages',
          headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' },
          payload: JSON.stringify({ model: 'm', messages, system, ...extra }),
        });
        const body = res.headers['content-type']?.toString().startsWith('text/event-stream')
          ? {}
          : JSON.parse(res.payload);
        return wellFormed(res.statusCode, body, true);
      },
    ),
    { numRuns: 120 },
  );
  t.pass();
});
