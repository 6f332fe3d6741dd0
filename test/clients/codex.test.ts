import test from 'ava';
import { agentDirs, codex } from '../helpers/agents.js';
import type { Json } from '../helpers/http.js';
import type { LoopbackVendor } from '../helpers/loopback-vendor.js';
import { startMockBedrock } from '../helpers/mock-bedrock.js';
import { startMockGemini } from '../helpers/mock-gemini.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { agentGateway, CODEX_DEFAULT, upstreamOf, type AgentGateway } from './support.js';

/**
 * The Codex CLI (`codex exec`, its default model and tools; a config.toml naming a real `svc
 * serve` as a custom model provider that speaks Responses, the svc key in the environment)
 * through the gateway to an OpenAI-kind upstream that speaks Responses: a plain prompt answered
 * from a streamed reply, and a turn where the vendor calls Codex's `exec` tool (a custom tool:
 * JavaScript that runs `cat` on a file in its working folder) and then answers from the file's
 * text, which went back to the vendor. The same through an OpenAI-kind upstream asked in chat
 * completions, and the tool turn through an Anthropic, a Bedrock and a Gemini upstream: its namespaces' tools
 * and its custom tool carried as function tools.
 */
let vendor: MockVendor;
let bedrock: LoopbackVendor;
let gemini: LoopbackVendor;
let g: AgentGateway;
let translated: AgentGateway;
const native = new Map<'anthropic' | 'bedrock' | 'gemini', AgentGateway>();

test.before(async () => {
  vendor = await startMockVendor();
  bedrock = await startMockBedrock();
  gemini = await startMockGemini();
  g = await agentGateway({ vendor }, { [CODEX_DEFAULT]: 'responses' });
  translated = await agentGateway({ vendor }, { [CODEX_DEFAULT]: 'openai' });
  for (const kind of ['anthropic', 'bedrock', 'gemini'] as const)
    native.set(kind, await agentGateway({ vendor, bedrock, gemini }, { [CODEX_DEFAULT]: kind }));
});

test.after.always(async () => {
  await g?.stop();
  await translated?.stop();
  for (const n of native.values()) await n.stop();
  await Promise.all([vendor?.close(), bedrock?.close(), gemini?.close()]);
});

const model = upstreamOf(CODEX_DEFAULT);
const sent = () => vendor.calls.filter((c) => c.path === '/v1/responses' && c.model === model);

test.serial('Codex answers a plain prompt through a Responses upstream', async (t) => {
  const dirs = await agentDirs({});
  t.teardown(dirs.clean);
  vendor.reset();
  vendor.fault(model, { kind: 'reply', pieces: ['Hello', ' from', ' the', ' gateway.'] });
  const run = await codex(g.server.url, g.key, 'Say hello.', dirs);
  t.is(run.code, 0, `${run.stdout}\n${run.stderr}`);
  t.is(run.stdout.trim(), 'Hello from the gateway.');
  const calls = sent();
  t.is(calls.length, 1);
  t.true(calls[0]!.stream, 'Codex streams');
  // Its tools, namespaces of them included, reach the vendor as it sent them.
  const tools = (calls[0]!.body.input as Json[]).find((i) => i.type === 'additional_tools');
  t.truthy(tools, JSON.stringify(calls[0]!.body.input).slice(0, 500));
  t.true((tools.tools as Json[]).some((x) => x.type === 'namespace'));
});

test.serial(
  'Codex runs cat through its exec tool and continues with the result through a Responses upstream',
  async (t) => {
    const dirs = await agentDirs({ 'notes.txt': 'The launch code is 4711.\n' });
    t.teardown(dirs.clean);
    vendor.reset();
    vendor.fault(model, {
      kind: 'call',
      name: 'exec',
      custom: true,
      arguments: 'const r = await tools.exec_command({ cmd: "cat notes.txt" });\ntext(r);\n',
    });
    vendor.fault(model, { kind: 'reply', pieces: ['The', ' code', ' is', ' 4711.'] });
    const run = await codex(g.server.url, g.key, 'What is the launch code in notes.txt?', dirs);
    t.is(run.code, 0, `${run.stdout}\n${run.stderr}`);
    t.is(run.stdout.trim(), 'The code is 4711.');
    const calls = sent();
    t.is(calls.length, 2, JSON.stringify(calls.map((c) => c.body.input?.length)));
    const input = calls[1]!.body.input as Json[];
    const output = input.find((i) => i.type === 'custom_tool_call_output');
    t.truthy(output, JSON.stringify(input.slice(-3)).slice(0, 2000));
    t.regex(JSON.stringify(output), /The launch code is 4711/);
  },
);

/** What the translated provider's vendor received (chat completions). */
const sentChat = () => vendor.calls.filter((c) => c.path === '/v1/chat/completions' && c.model === model);

test.serial('Codex answers a plain prompt through a provider asked in chat completions', async (t) => {
  const dirs = await agentDirs({});
  t.teardown(dirs.clean);
  vendor.reset();
  vendor.fault(model, { kind: 'reply', pieces: ['Hello', ' from', ' the', ' gateway.'] });
  const run = await codex(translated.server.url, translated.key, 'Say hello.', dirs);
  t.is(run.code, 0, `${run.stdout}\n${run.stderr}`);
  t.is(run.stdout.trim(), 'Hello from the gateway.');
  const calls = sentChat();
  t.is(calls.length, 1);
  t.true(calls[0]!.stream);
  // Its namespaces' tools, each under its qualified name; its custom tool as a function of its input.
  const names = (calls[0]!.body.tools as Json[]).map((x) => x.function.name as string);
  t.true(names.includes('functions__exec'), names.join(' '));
  t.true(names.includes('collaboration__spawn_agent'), names.join(' '));
});

test.serial(
  'Codex runs cat through its exec tool and continues with the result through a provider asked in chat completions',
  async (t) => {
    const dirs = await agentDirs({ 'notes.txt': 'The launch code is 4711.\n' });
    t.teardown(dirs.clean);
    vendor.reset();
    // The vendor calls the function the custom tool was offered as; Codex gets its custom call.
    vendor.fault(model, {
      kind: 'call',
      name: 'functions__exec',
      arguments: JSON.stringify({
        input: 'const r = await tools.exec_command({ cmd: "cat notes.txt" });\ntext(r);\n',
      }),
    });
    vendor.fault(model, { kind: 'reply', pieces: ['The', ' code', ' is', ' 4711.'] });
    const run = await codex(translated.server.url, translated.key, 'What is the launch code in notes.txt?', dirs);
    t.is(run.code, 0, `${run.stdout}\n${run.stderr}`);
    t.is(run.stdout.trim(), 'The code is 4711.');
    const calls = sentChat();
    t.is(calls.length, 2);
    const messages = calls[1]!.body.messages as Json[];
    const result = messages.find((m) => m.role === 'tool');
    t.truthy(result, JSON.stringify(messages.slice(-3)).slice(0, 2000));
    t.regex(JSON.stringify(result), /The launch code is 4711/);
  },
);

/** How each kind receives a tool's result. */
const RESULT = { anthropic: /"tool_result"/, bedrock: /"toolResult"/, gemini: /"functionResponse"/ };
const EXEC_INPUT = 'const r = await tools.exec_command({ cmd: "cat notes.txt" });\ntext(r);\n';

for (const kind of ['anthropic', 'bedrock', 'gemini'] as const)
  test.serial(
    `Codex runs cat through its exec tool and continues with the result through a ${kind} upstream`,
    async (t) => {
      const n = native.get(kind)!;
      const dirs = await agentDirs({ 'notes.txt': 'The launch code is 4711.\n' });
      t.teardown(dirs.clean);
      const reply = { kind: 'reply' as const, pieces: ['The', ' code', ' is', ' 4711.'] };
      let calls: () => { body: Json }[];
      if (kind === 'anthropic') {
        vendor.reset();
        vendor.fault(model, {
          kind: 'call',
          name: 'functions__exec',
          arguments: JSON.stringify({ input: EXEC_INPUT }),
        });
        vendor.fault(model, reply);
        calls = () => vendor.calls.filter((c) => c.path === '/v1/messages' && c.model === model);
      } else {
        const up = kind === 'bedrock' ? bedrock : gemini;
        up.reset();
        up.fault(model, { kind: 'call', name: 'functions__exec', input: { input: EXEC_INPUT } });
        up.fault(model, reply);
        calls = () => up.calls.filter((c) => c.model === model);
      }
      const run = await codex(n.server.url, n.key, 'What is the launch code in notes.txt?', dirs);
      t.is(run.code, 0, `${run.stdout}\n${run.stderr}`);
      t.is(run.stdout.trim(), 'The code is 4711.');
      t.is(calls().length, 2);
      // The file's text went back to the vendor as the tool's result.
      const last = JSON.stringify(calls()[1]!.body);
      t.regex(last, RESULT[kind]);
      t.regex(last, /The launch code is 4711/);
    },
  );
