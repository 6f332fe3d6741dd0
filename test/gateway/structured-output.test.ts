import test from 'ava';
import { call, type Json } from '../helpers/http.js';
import type { LoopbackVendor } from '../helpers/loopback-vendor.js';
import { AWS_ENV, startMockBedrock } from '../helpers/mock-bedrock.js';
import { GEMINI_KEY, startMockGemini } from '../helpers/mock-gemini.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { catalogueModel, providersOf } from '../clients/support.js';
import { startGateway, type Gateway } from './support.js';

/**
 * Structured output asked in one shape reaches a vendor of another kind with its meaning:
 * OpenAI's `response_format` json_schema as Anthropic's `output_config.format`, and back; to
 * Gemini as `responseJsonSchema`; to Bedrock as Converse's `outputConfig.textFormat`.
 */
let vendor: MockVendor;
let bedrock: LoopbackVendor;
let gemini: LoopbackVendor;
let gw: Gateway;
let key: string;

const SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

test.before(async () => {
  vendor = await startMockVendor();
  bedrock = await startMockBedrock();
  gemini = await startMockGemini();
  gw = await startGateway(
    vendor,
    {
      providers: providersOf({ vendor, bedrock, gemini }),
      models: [
        catalogueModel('so-anthropic', 'anthropic', 'claude-so'),
        catalogueModel('so-openai', 'openai', 'gpt-so'),
        catalogueModel('so-gemini', 'gemini', 'gemini-2.5-flash'),
        catalogueModel('so-bedrock', 'bedrock', 'anthropic.claude-so-v1:0'),
      ],
      policyProfiles: [],
    },
    { ...AWS_ENV, GEMINI_API_KEY: GEMINI_KEY },
  );
  key = await gw.key({ defaultTaskClass: 'general' });
});

test.after.always(async () => {
  await gw?.server.stop();
  await Promise.all([vendor?.close(), bedrock?.close(), gemini?.close()]);
});

const chat = (model: string) =>
  call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: { authorization: `Bearer ${key}` },
    json: {
      model,
      messages: [{ role: 'user', content: 'Where is the Louvre?' }],
      response_format: { type: 'json_schema', json_schema: { name: 'place', schema: SCHEMA } },
    },
  });

const messages = (model: string) =>
  call(gw.server.url, 'POST', '/v1/messages', {
    headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' },
    json: {
      model,
      max_tokens: 100,
      messages: [{ role: 'user', content: 'Where is the Louvre?' }],
      output_config: { format: { type: 'json_schema', schema: SCHEMA } },
    },
  });

test.serial('response_format json_schema reaches an Anthropic-kind vendor as output_config.format', async (t) => {
  const res = await chat('so-anthropic');
  t.is(res.status, 200, res.text);
  t.deepEqual((vendor.calls.at(-1)!.body as Json).output_config, { format: { type: 'json_schema', schema: SCHEMA } });
});

test.serial('output_config.format reaches an OpenAI-kind vendor as response_format json_schema', async (t) => {
  const res = await messages('so-openai');
  t.is(res.status, 200, res.text);
  const sent = vendor.calls.at(-1)!.body as Json;
  t.is(sent.response_format.type, 'json_schema');
  t.deepEqual(sent.response_format.json_schema.schema, SCHEMA);
});

test.serial('output_config.format reaches Gemini as responseJsonSchema', async (t) => {
  const res = await messages('so-gemini');
  t.is(res.status, 200, res.text);
  const config = (gemini.calls.at(-1)!.body as Json).generationConfig;
  t.is(config.responseMimeType, 'application/json');
  t.deepEqual(config.responseJsonSchema, SCHEMA);
});

test.serial('structured output reaches Bedrock as outputConfig.textFormat, the schema as JSON text', async (t) => {
  for (const res of [await messages('so-bedrock'), await chat('so-bedrock')]) {
    t.is(res.status, 200, res.text);
    const format = (bedrock.calls.at(-1)!.body as Json).outputConfig.textFormat;
    t.is(format.type, 'json_schema');
    t.deepEqual(JSON.parse(format.structure.jsonSchema.schema as string), SCHEMA);
  }
});
