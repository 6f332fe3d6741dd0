import test from 'ava';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { assertError, call, type Json } from '../helpers/http.js';
import type { LoopbackVendor } from '../helpers/loopback-vendor.js';
import { AZURE_API_VERSION, AZURE_KEY, startMockAzure } from '../helpers/mock-azure.js';
import { AWS_ENV, startMockBedrock } from '../helpers/mock-bedrock.js';
import { GEMINI_KEY, startMockGemini, THOUGHT_SIGNATURE } from '../helpers/mock-gemini.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { ROOT } from '../helpers/process.js';
import { startGateway, type Gateway } from '../gateway/support.js';
import { catalogueModel, providersOf } from './support.js';

/**
 * The requests Claude Code, Codex CLI and the Vercel AI SDK sent (test/fixtures/agents/, recorded
 * from the agent tests), replayed through the gateway to every vendor kind: what each vendor
 * receives carries what the agent sent (system turns mid-conversation, betas, thinking and
 * effort, tool results, namespaces and custom tools, structured output), and what a vendor kind
 * cannot take is refused by name, never dropped.
 */
const fixture = (name: string): { path: string; headers: Record<string, string>; body: Json } =>
  JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', 'agents', `${name}.json`), 'utf8'));

let vendor: MockVendor;
let bedrock: LoopbackVendor;
let gemini: LoopbackVendor;
let azure: LoopbackVendor;
let gw: Gateway;
let key: string;
let translatedKey: string;
let notAnthropicKey: string;

const KINDS = ['anthropic', 'openai', 'responses', 'azure', 'bedrock', 'gemini'] as const;
type Kind = (typeof KINDS)[number];
const UPSTREAM: Record<Kind, string> = {
  anthropic: 'claude-2026',
  openai: 'gpt-2026',
  responses: 'gpt-r-2026',
  azure: 'azure-deployment',
  bedrock: 'anthropic.claude-sonnet-v1:0',
  gemini: 'gemini-3-flash',
};

test.before(async () => {
  vendor = await startMockVendor();
  bedrock = await startMockBedrock();
  gemini = await startMockGemini();
  azure = await startMockAzure();
  gw = await startGateway(
    vendor,
    {
      providers: [
        ...providersOf({ vendor, bedrock, gemini }),
        {
          id: 'azure',
          kind: 'azure-openai',
          baseUrl: azure.url,
          apiVersion: AZURE_API_VERSION,
          apiKeyEnv: 'AZURE_OPENAI_KEY',
        },
      ],
      models: KINDS.map((kind) => catalogueModel(`via-${kind}`, kind, UPSTREAM[kind])),
      // Without the provider that speaks Responses: what only it can take is refused by name.
      policyProfiles: [
        { id: 'translated', providers: ['anthropic', 'openai', 'azure', 'bedrock', 'gemini'] },
        // Only vendors asked in another shape than Anthropic's: what none can carry is refused.
        { id: 'not-anthropic', providers: ['openai', 'azure', 'gemini'] },
      ],
    },
    { ...AWS_ENV, GEMINI_API_KEY: GEMINI_KEY, AZURE_OPENAI_KEY: AZURE_KEY },
  );
  key = await gw.key({ defaultTaskClass: 'general' });
  translatedKey = await gw.key({ defaultTaskClass: 'general', policyProfile: 'translated' });
  notAnthropicKey = await gw.key({ defaultTaskClass: 'general', policyProfile: 'not-anthropic' });
});

test.after.always(async () => {
  await gw?.server.stop();
  await Promise.all([vendor?.close(), bedrock?.close(), gemini?.close(), azure?.close()]);
});

const replay = (name: string, kind: Kind, k = key) => {
  const f = fixture(name);
  const auth: Record<string, string> = f.path.startsWith('/v1/messages')
    ? { 'x-api-key': k }
    : { authorization: `Bearer ${k}` };
  const headers = { ...f.headers, ...auth };
  return call(gw.server.url, 'POST', f.path, { headers, json: { ...f.body, model: `via-${kind}` } });
};

/** What the vendor of `kind` received last. */
const received = (kind: Kind): Json => {
  const from = kind === 'bedrock' ? bedrock : kind === 'gemini' ? gemini : kind === 'azure' ? azure : vendor;
  return from.calls.at(-1)!;
};

/** The text of the Claude Code system turn that stands after its first user turn. */
const claudeSystemTurn = (name: string): string => {
  const turn = (fixture(name).body.messages as Json[]).find((m) => m.role === 'system')!;
  return typeof turn.content === 'string' ? turn.content : ((turn.content as Json[])[0].text as string);
};

const ANTHROPIC_KINDS: Kind[] = ['anthropic', 'openai', 'azure', 'bedrock', 'gemini'];

test.serial("Claude Code's thinking, effort, context editing and user reach each kind in its own terms", async (t) => {
  const f = fixture('claude-code-plain');
  const expect: Record<string, (b: Json) => void> = {
    openai: (b) => {
      t.is(b.reasoning_effort, 'medium');
      t.regex(String(b.safety_identifier), /^[0-9a-f]{64}$/, 'the user id, hashed within 64 characters');
    },
    azure: (b) => t.is(b.reasoning_effort, 'medium'),
    // Gemini 3 thinks at a level: medium effort is its high level.
    gemini: (b) => t.deepEqual(b.generationConfig.thinkingConfig, { thinkingLevel: 'high' }),
    bedrock: (b) => {
      t.deepEqual(b.additionalModelRequestFields.thinking, f.body.thinking);
      t.deepEqual(b.additionalModelRequestFields.output_config, { effort: 'medium' });
      t.deepEqual(b.additionalModelRequestFields.context_management, f.body.context_management);
      t.true((b.additionalModelRequestFields.anthropic_beta as string[]).includes('context-management-2025-06-27'));
      t.false((b.additionalModelRequestFields.anthropic_beta as string[]).includes('claude-code-20250219'));
      t.regex(String(b.requestMetadata.user), /^[0-9a-f]{64}$/);
    },
  };
  for (const [kind, check] of Object.entries(expect)) {
    const res = await replay('claude-code-plain', kind as Kind);
    t.is(res.status, 200, `${kind}: ${res.text.slice(0, 300)}`);
    check(received(kind as Kind).body);
  }
});

test.serial('clearing tool results (context editing) is refused by name where no vendor can do it', async (t) => {
  const f = fixture('claude-code-plain');
  const edits = { edits: [{ type: 'clear_tool_uses_20250919' }] };
  for (const kind of ['openai', 'gemini'] as const) {
    const before = received(kind);
    const res = await call(gw.server.url, 'POST', f.path, {
      headers: { ...f.headers, 'x-api-key': notAnthropicKey },
      json: { ...f.body, model: `via-${kind}`, context_management: edits },
    });
    assertError(t, res, 400, 'invalid_request');
    t.deepEqual(
      (res.body.error.errors as Json[]).map((e) => e.field),
      ['context_management.edits.0'],
    );
    t.truthy(res.body.error.fix);
    t.is(received(kind), before, 'nothing sent');
  }
  // Anthropic and Bedrock's Claude take it.
  for (const kind of ['anthropic', 'bedrock'] as const) {
    const res = await call(gw.server.url, 'POST', f.path, {
      headers: { ...f.headers, 'x-api-key': key },
      json: { ...f.body, model: `via-${kind}`, context_management: edits },
    });
    t.is(res.status, 200, `${kind}: ${res.text.slice(0, 300)}`);
  }
});
for (const name of ['claude-code-plain', 'claude-code-tool-result'])
  for (const kind of ANTHROPIC_KINDS) {
    test.serial(
      `${name} through ${kind}: answered as a stream; the system turn and tool results carried`,
      async (t) => {
        const res = await replay(name, kind);
        t.is(res.status, 200, res.text);
        t.regex(res.text, /event: message_stop/);
        t.regex(res.text, new RegExp(`"model":"via-${kind}"`));
        t.false(res.text.includes(UPSTREAM[kind]), 'every event names the catalogue model, never the vendor’s');
        const seen = received(kind);
        const sent = JSON.stringify(seen.body);
        const system = claudeSystemTurn(name).slice(0, 60);
        t.true(sent.includes(JSON.stringify(system).slice(1, -1)), 'the system turn reached the vendor');
        if (name.endsWith('tool-result')) t.regex(sent, /The launch code is 4711/);
        if (kind === 'anthropic') {
          const f = fixture(name);
          t.deepEqual(seen.body, { ...f.body, model: UPSTREAM.anthropic }, 'passed as the agent sent it');
          t.is(seen.headers['anthropic-beta'], f.headers['anthropic-beta']);
        }
        if (kind === 'openai' || kind === 'azure') {
          const roles = (seen.body.messages as Json[]).map((m) => m.role);
          t.is(roles[1], 'user');
          t.is(roles[2], 'system', 'in its place in the conversation');
        }
      },
    );
  }

for (const name of ['codex-plain', 'codex-tool-result']) {
  test.serial(`${name} through a vendor that speaks Responses: passed as the agent sent it`, async (t) => {
    const res = await replay(name, 'responses');
    t.is(res.status, 200, res.text);
    t.regex(res.text, /event: response.completed/);
    t.false(res.text.includes(UPSTREAM.responses), 'every event names the catalogue model, never the vendor’s');
    const seen = received('responses');
    t.is(seen.path, '/v1/responses');
    t.deepEqual(seen.body.input, fixture(name).body.input);
  });

  for (const kind of ['anthropic', 'openai', 'bedrock', 'gemini'] as const)
    test.serial(`${name} to ${kind}: its namespaces and custom tool carried as functions`, async (t) => {
      const res = await replay(name, kind);
      t.is(res.status, 200, res.text.slice(0, 500));
      t.regex(res.text, new RegExp(`"model":"via-${kind}"`));
      t.regex(res.text, /event: response.completed/);
      const sent = JSON.stringify(received(kind).body);
      // Each tool under its namespace-qualified name; the custom tool as a function of its input.
      t.regex(sent, /functions__exec/);
      t.regex(sent, /collaboration__spawn_agent/);
      if (name.endsWith('tool-result')) {
        t.regex(sent, /The launch code is 4711/);
        t.regex(sent, /cat notes.txt/);
      }
    });
}

test.serial(
  'a hosted tool (web_search) at a vendor asked in chat completions is refused by name, with the fix',
  async (t) => {
    const f = fixture('codex-plain');
    const before = received('anthropic');
    const res = await call(gw.server.url, 'POST', f.path, {
      headers: { ...f.headers, authorization: `Bearer ${translatedKey}` },
      json: { ...f.body, model: 'via-anthropic', tools: [{ type: 'web_search' }] },
    });
    assertError(t, res, 400, 'invalid_request');
    t.deepEqual(
      (res.body.error.errors as Json[]).map((e) => e.field),
      ['tools.0.type'],
    );
    t.regex(res.body.error.fix, /responses: true/);
    t.is(received('anthropic'), before, 'nothing sent');
  },
);

/** Where each kind receives a structured-output schema (as the schema, or a forced tool's input). */
const schemaAt = (kind: Kind, body: Json): unknown => {
  switch (kind) {
    case 'anthropic':
      return body.output_config?.format?.schema ?? body.tools?.find((x: Json) => x.name === 'json')?.input_schema;
    case 'responses':
    case 'openai':
    case 'azure':
      return (
        body.response_format?.json_schema?.schema ??
        body.text?.format?.schema ??
        body.tools?.find((x: Json) => x.function?.name === 'json')?.function?.parameters
      );
    case 'bedrock': {
      const s = body.outputConfig?.textFormat?.structure?.jsonSchema?.schema;
      return typeof s === 'string'
        ? JSON.parse(s)
        : body.toolConfig?.tools?.find((x: Json) => x.toolSpec?.name === 'json')?.toolSpec?.inputSchema?.json;
    }
    case 'gemini':
      return (
        body.generationConfig?.responseJsonSchema ??
        body.tools?.[0]?.functionDeclarations?.find((x: Json) => x.name === 'json')?.parametersJsonSchema
      );
  }
};

// The Vercel AI SDK's requests (test/clients/ai-sdk.test.ts), each of its three wire shapes.
for (const kind of KINDS)
  test.serial(`ai-sdk-chat-stream through ${kind}: answered as a stream, with its usage`, async (t) => {
    const res = await replay('ai-sdk-chat-stream', kind);
    t.is(res.status, 200, res.text.slice(0, 500));
    t.regex(res.text, /"usage":\{"prompt_tokens":\d+/);
    t.regex(res.text, /data: \[DONE\]/);
  });

for (const client of ['chat', 'responses', 'anthropic'])
  for (const kind of KINDS) {
    test.serial(`ai-sdk-${client}-tool-result through ${kind}: the tool's result reaches the vendor`, async (t) => {
      const res = await replay(`ai-sdk-${client}-tool-result`, kind);
      t.is(res.status, 200, res.text.slice(0, 500));
      t.regex(JSON.stringify(received(kind).body), /The launch code is 4711/);
    });
    test.serial(`ai-sdk-${client}-object through ${kind}: the schema reaches the vendor`, async (t) => {
      const res = await replay(`ai-sdk-${client}-object`, kind);
      t.is(res.status, 200, res.text.slice(0, 500));
      t.like(schemaAt(kind, received(kind).body), { properties: { city: { type: 'string' } } });
    });
  }

test.serial('anthropic-beta reaches an Anthropic-kind vendor: an unknown beta is its refusal, relayed', async (t) => {
  const f = fixture('claude-code-plain');
  const send = (beta: string | undefined) =>
    call(gw.server.url, 'POST', '/v1/messages?beta=true', {
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', ...(beta ? { 'anthropic-beta': beta } : {}) },
      json: { ...f.body, model: 'via-anthropic' },
    });
  const unknown = await send(`${f.headers['anthropic-beta']},no-such-beta-2020-01-01`);
  t.is(unknown.status, 400, unknown.text);
  t.regex(unknown.body.error.message, /no-such-beta-2020-01-01/);
  // Without the beta, the vendor refuses the beta-only field by name.
  const without = await send(undefined);
  t.is(without.status, 400, without.text);
  t.regex(without.body.error.message, /context_management/);
  t.is((await send(f.headers['anthropic-beta'])).status, 200);
});

test.serial(
  'a conversation Gemini began continues at any vendor: tool-call ids re-keyed within each limit',
  async (t) => {
    const f = fixture('claude-code-tool-result');
    // A Gemini call's id carries its thought signature: longer than OpenAI's 40.
    const long = `call_1__ts_${Buffer.from(THOUGHT_SIGNATURE, 'base64').toString('base64url')}`;
    t.true(long.length > 40);
    const body = JSON.parse(JSON.stringify(f.body).replaceAll('toolu_1', long)) as Json;
    for (const kind of ANTHROPIC_KINDS) {
      const res = await call(gw.server.url, 'POST', f.path, {
        headers: { ...f.headers, 'x-api-key': key },
        json: { ...body, model: `via-${kind}` },
      });
      t.is(res.status, 200, `${kind}: ${res.text.slice(0, 500)}`);
      const sent = JSON.stringify(received(kind).body);
      t.regex(sent, /The launch code is 4711/, kind);
      if (kind === 'openai' || kind === 'azure') t.false(sent.includes(long), kind);
    }
  },
);

test.serial(
  'a tool-call id beyond Bedrock’s 64 characters is re-keyed, the call and its result still matched',
  async (t) => {
    const f = fixture('claude-code-tool-result');
    const long = `toolu_${'0123456789'.repeat(10)}`;
    const body = JSON.parse(JSON.stringify(f.body).replaceAll('toolu_1', long)) as Json;
    for (const kind of ['bedrock', 'openai', 'anthropic'] as const) {
      const res = await call(gw.server.url, 'POST', f.path, {
        headers: { ...f.headers, 'x-api-key': key },
        json: { ...body, model: `via-${kind}` },
      });
      t.is(res.status, 200, `${kind}: ${res.text.slice(0, 500)}`);
      // The vendor that takes it (Anthropic) gets it as it is.
      t.is(JSON.stringify(received(kind).body).includes(long), kind === 'anthropic', kind);
    }
  },
);
