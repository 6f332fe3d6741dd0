import test from 'ava';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { generateObject, generateText, jsonSchema, stepCountIs, streamText, tool, type LanguageModel } from 'ai';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectStatus, ownerConsole } from '../helpers/console.js';
import { call, type Json } from '../helpers/http.js';
import type { LoopbackVendor } from '../helpers/loopback-vendor.js';
import { startMockBedrock } from '../helpers/mock-bedrock.js';
import { startMockGemini } from '../helpers/mock-gemini.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { ROOT } from '../helpers/process.js';
import { poll } from '../helpers/wait.js';
import { agentGateway, upstreamOf, type AgentGateway, type Upstream } from './support.js';

/**
 * The Vercel AI SDK (`ai`, with its OpenAI and Anthropic providers pointed at a real `svc serve`
 * by `baseURL`, an svc key as the API key) through the gateway to every upstream kind: a plain
 * `generateText`, a `streamText`, a multi-step `generateText` whose tool the SDK runs and whose
 * result the model then answers from, and `generateObject` with a JSON schema. Each through the
 * SDK's three wire shapes (`createOpenAI().chat()`: chat completions; `.responses()`: Responses;
 * `createAnthropic()`: Messages). What the user sees is asserted (the text, the object, the tool's
 * result used), and what svc recorded (the usage report's calls and tokens, as the SDK saw them).
 *
 * With SVC_RECORD_AI_SDK=1 the requests the SDK sent are written to test/fixtures/agents/
 * (ai-sdk-*.json; then `npx prettier --write test/fixtures/agents`), which
 * test/clients/replay.test.ts replays to every vendor kind.
 */
let vendor: MockVendor;
let bedrock: LoopbackVendor;
let gemini: LoopbackVendor;
let g: AgentGateway;
let admin: string;

const UPSTREAMS: Upstream[] = ['anthropic', 'openai', 'responses', 'bedrock', 'gemini'];
const CLIENTS = ['chat', 'responses', 'anthropic'] as const;
type Client = (typeof CLIENTS)[number];

const modelId = (upstream: Upstream) => `sdk-${upstream}`;

test.before(async () => {
  vendor = await startMockVendor();
  bedrock = await startMockBedrock();
  gemini = await startMockGemini();
  g = await agentGateway(
    { vendor, bedrock, gemini },
    Object.fromEntries(UPSTREAMS.map((u) => [modelId(u), u])) as Record<string, Upstream>,
  );
  const owner = await ownerConsole(g.server);
  admin = expectStatus(await owner.send('POST', '/keys', { scope: 'admin', name: 'reports' }), 201, 'key').body
    .key as string;
});

test.after.always(async () => {
  await g?.stop();
  await Promise.all([vendor?.close(), bedrock?.close(), gemini?.close()]);
});

/** What the SDK sent svc, by client, for the fixtures. */
const sentBySdk: { path: string; headers: Record<string, string>; body: Json }[] = [];

/** A fetch that keeps what the SDK sends (path, the headers a vendor reads, body), then sends it. */
const recordingFetch: typeof fetch = async (input, init) => {
  const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
  const headers = new Headers(init?.headers);
  const kept: Record<string, string> = {};
  for (const name of ['anthropic-version', 'anthropic-beta', 'content-type'])
    if (headers.has(name)) kept[name] = headers.get(name)!;
  if (typeof init?.body === 'string')
    sentBySdk.push({ path: url.pathname + url.search, headers: kept, body: JSON.parse(init.body) as Json });
  return fetch(input, init);
};

function modelFor(client: Client, upstream: Upstream): LanguageModel {
  const baseURL = `${g.server.url}/v1`;
  if (client === 'anthropic')
    return createAnthropic({ baseURL, apiKey: g.key, fetch: recordingFetch })(modelId(upstream));
  const openai = createOpenAI({ baseURL, apiKey: g.key, fetch: recordingFetch });
  return client === 'chat' ? openai.chat(modelId(upstream)) : openai.responses(modelId(upstream));
}

/** The requests an upstream kind received for the model, and its next answers scripted. */
function upstreamOfKind(upstream: Upstream) {
  const model = upstreamOf(modelId(upstream));
  if (upstream === 'bedrock' || upstream === 'gemini') {
    const v = () => (upstream === 'bedrock' ? bedrock : gemini);
    return {
      sent: () => v().calls.filter((c) => c.model === model),
      reset: () => v().reset(),
      call: (name: string, input: Json) => v().fault(model, { kind: 'call', name, input }),
      reply: (pieces: string[]) => v().fault(model, { kind: 'reply', pieces }),
    };
  }
  // A provider that speaks Responses takes chat completions too: a chat client's request stays one.
  return {
    sent: () => vendor.calls.filter((c) => c.model === model),
    reset: () => vendor.reset(),
    call: (name: string, input: Json) => vendor.fault(model, { kind: 'call', name, arguments: JSON.stringify(input) }),
    reply: (pieces: string[]) => vendor.fault(model, { kind: 'reply', pieces }),
  };
}

/** The usage report's line for a model: calls and tokens svc recorded. */
async function recorded(upstream: Upstream): Promise<{ calls: number; inputTokens: number; outputTokens: number }> {
  const res = await call(g.server.url, 'GET', '/v1/admin/usage?by=model', {
    headers: { authorization: `Bearer ${admin}` },
  });
  const line = (res.body.data as Json[]).find((d) => d.group === modelId(upstream));
  return { calls: line?.calls ?? 0, inputTokens: line?.inputTokens ?? 0, outputTokens: line?.outputTokens ?? 0 };
}

/** After a run: svc recorded `calls` more calls, with the tokens the SDK reported. */
async function assertRecorded(
  t: import('ava').ExecutionContext,
  upstream: Upstream,
  before: Awaited<ReturnType<typeof recorded>>,
  calls: number,
  usage: { inputTokens: number | undefined; outputTokens: number | undefined },
) {
  const after = await poll(
    () => recorded(upstream),
    (r) => r.calls >= before.calls + calls,
    { timeoutMs: 10_000 },
  );
  t.is(after.calls - before.calls, calls, 'one call record per model call');
  t.is(after.inputTokens - before.inputTokens, usage.inputTokens ?? 0, 'input tokens as the SDK was told');
  t.is(after.outputTokens - before.outputTokens, usage.outputTokens ?? 0, 'output tokens as the SDK was told');
}

/** The schema the structured-output tests ask for, and the object the vendor answers. */
const CITY = jsonSchema<{ city: string; population: number }>({
  type: 'object',
  properties: { city: { type: 'string' }, population: { type: 'number' } },
  required: ['city', 'population'],
  additionalProperties: false,
});
const PARIS = { city: 'Paris', population: 2102650 };

/** How each kind receives the schema. */
const SCHEMA_SENT: Record<Upstream, (body: Json) => unknown> = {
  anthropic: (b) => b.output_config?.format?.schema ?? b.tools?.find((x: Json) => x.name === 'json')?.input_schema,
  openai: (b) =>
    b.response_format?.json_schema?.schema ??
    b.tools?.find((x: Json) => x.function?.name === 'json')?.function?.parameters,
  responses: (b) =>
    b.text?.format?.schema ??
    b.response_format?.json_schema?.schema ??
    b.tools?.find((x: Json) => x.function?.name === 'json')?.function?.parameters,
  bedrock: (b) => {
    const s = b.outputConfig?.textFormat?.structure?.jsonSchema?.schema;
    if (typeof s === 'string') return JSON.parse(s);
    return b.toolConfig?.tools?.find((x: Json) => x.toolSpec?.name === 'json')?.toolSpec?.inputSchema?.json;
  },
  gemini: (b) =>
    b.generationConfig?.responseJsonSchema ??
    b.tools?.[0]?.functionDeclarations?.find((x: Json) => x.name === 'json')?.parametersJsonSchema,
};

/** How each kind names a tool's result in what it receives. */
const TOOL_RESULT: Record<Upstream, RegExp> = {
  anthropic: /"tool_result"/,
  openai: /"role":"tool"/,
  responses: /"function_call_output"|"role":"tool"/,
  bedrock: /"toolResult"/,
  gemini: /"functionResponse"/,
};

const lookup = tool({
  description: 'Looks a code up by its name.',
  inputSchema: jsonSchema<{ name: string }>({
    type: 'object',
    properties: { name: { type: 'string' } },
    required: ['name'],
  }),
  execute: ({ name }) => Promise.resolve(`The ${name} code is 4711.`),
});

for (const client of CLIENTS)
  for (const upstream of UPSTREAMS) {
    const up = upstreamOfKind(upstream);
    const where = `${client} client, ${upstream} upstream`;

    test.serial(`AI SDK generateText answers a plain prompt (${where})`, async (t) => {
      const before = await recorded(upstream);
      up.reset();
      up.reply(['Hello', ' from', ' the', ' gateway.']);
      const result = await generateText({ model: modelFor(client, upstream), prompt: 'Say hello.', maxRetries: 0 });
      t.is(result.text, 'Hello from the gateway.');
      t.is(result.finishReason, 'stop');
      const calls = up.sent();
      t.is(calls.length, 1);
      t.false(calls[0]!.stream);
      t.true((result.usage.inputTokens ?? 0) > 0);
      await assertRecorded(t, upstream, before, 1, result.usage);
    });

    test.serial(`AI SDK streamText streams the answer (${where})`, async (t) => {
      const before = await recorded(upstream);
      up.reset();
      up.reply(['Streamed', ' through', ' svc.']);
      const result = streamText({ model: modelFor(client, upstream), prompt: 'Say something.', maxRetries: 0 });
      const pieces: string[] = [];
      for await (const piece of result.textStream) pieces.push(piece);
      t.is(pieces.join(''), 'Streamed through svc.');
      t.true(pieces.length >= 1);
      const calls = up.sent();
      t.is(calls.length, 1);
      t.true(calls[0]!.stream, 'the vendor was asked for a stream');
      await assertRecorded(t, upstream, before, 1, await result.usage);
    });

    test.serial(`AI SDK runs a tool and answers from its result in a second step (${where})`, async (t) => {
      const before = await recorded(upstream);
      up.reset();
      up.call('lookup', { name: 'launch' });
      up.reply(['The', ' code', ' is', ' 4711.']);
      const result = await generateText({
        model: modelFor(client, upstream),
        prompt: 'What is the launch code?',
        tools: { lookup },
        stopWhen: stepCountIs(3),
        maxRetries: 0,
      });
      t.is(result.text, 'The code is 4711.');
      t.is(result.steps.length, 2);
      const first = result.steps[0]!;
      t.deepEqual(
        first.toolCalls.map((c) => [c.toolName, c.input]),
        [['lookup', { name: 'launch' }]],
      );
      t.deepEqual(
        first.toolResults.map((r) => r.output),
        ['The launch code is 4711.'],
      );
      const calls = up.sent();
      t.is(calls.length, 2);
      // The tool's result went back to the vendor.
      const last = JSON.stringify(calls[1]!.body);
      t.regex(last, TOOL_RESULT[upstream]);
      t.regex(last, /The launch code is 4711/);
      await assertRecorded(t, upstream, before, 2, result.totalUsage);
    });

    test.serial(`AI SDK generateObject answers an object of the schema (${where})`, async (t) => {
      const before = await recorded(upstream);
      up.reset();
      const text = JSON.stringify(PARIS);
      // The Anthropic provider asks for the object as a call of its forced `json` tool.
      if (client === 'anthropic') up.call('json', PARIS);
      else up.reply([text.slice(0, 12), text.slice(12)]);
      const result = await generateObject({
        model: modelFor(client, upstream),
        schema: CITY,
        prompt: 'The largest city of France, and its population.',
        maxRetries: 0,
      });
      t.deepEqual(result.object, PARIS);
      const calls = up.sent();
      t.is(calls.length, 1);
      // The vendor was given the schema, in its own form.
      t.like(SCHEMA_SENT[upstream](calls[0]!.body), { properties: { city: { type: 'string' } } });
      await assertRecorded(t, upstream, before, 1, result.usage);
    });
  }

test.after.always(() => {
  if (process.env.SVC_RECORD_AI_SDK !== '1') return;
  // One request per client and kind of turn: the last turn of the tool run, and the object.
  const dir = join(ROOT, 'test', 'fixtures', 'agents');
  mkdirSync(dir, { recursive: true });
  const pick = (path: string, test: (b: Json) => boolean) =>
    sentBySdk.find((s) => s.path.startsWith(path) && test(s.body));
  const has = (b: Json, re: RegExp) => re.test(JSON.stringify(b));
  const cases: Record<string, ReturnType<typeof pick>> = {
    'ai-sdk-chat-tool-result': pick('/v1/chat/completions', (b) => has(b, /"role":"tool"/)),
    'ai-sdk-chat-object': pick('/v1/chat/completions', (b) => b.response_format != null),
    'ai-sdk-chat-stream': pick('/v1/chat/completions', (b) => b.stream === true),
    'ai-sdk-responses-tool-result': pick('/v1/responses', (b) => has(b, /"function_call_output"/)),
    'ai-sdk-responses-object': pick('/v1/responses', (b) => b.text?.format != null),
    'ai-sdk-anthropic-tool-result': pick('/v1/messages', (b) => has(b, /"tool_result"/)),
    'ai-sdk-anthropic-object': pick('/v1/messages', (b) => has(b, /"json_schema"|"name":"json"/)),
  };
  for (const [name, found] of Object.entries(cases))
    if (found) writeFileSync(join(dir, `${name}.json`), `${JSON.stringify(found, null, 2)}\n`);
});
