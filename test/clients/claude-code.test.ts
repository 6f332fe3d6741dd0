import test from 'ava';
import { join } from 'node:path';
import { agentDirs, claudeCode } from '../helpers/agents.js';
import type { Json } from '../helpers/http.js';
import type { LoopbackVendor } from '../helpers/loopback-vendor.js';
import { startMockBedrock } from '../helpers/mock-bedrock.js';
import { startMockGemini } from '../helpers/mock-gemini.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { agentGateway, CLAUDE_DEFAULT, upstreamOf, type AgentGateway, type Upstream } from './support.js';

/**
 * Claude Code (print mode, its default model and settings; ANTHROPIC_BASE_URL at a real `svc
 * serve`, an svc key as ANTHROPIC_API_KEY) through the gateway to an Anthropic-kind upstream
 * and translated to an OpenAI-kind, a Bedrock and a Gemini upstream: a plain prompt answered from
 * a streamed reply, and a turn where the vendor calls Claude Code's Read tool on a file in its
 * working folder and then answers from the file's text, which went back to the vendor.
 */
let vendor: MockVendor;
let bedrock: LoopbackVendor;
let gemini: LoopbackVendor;
const gateways = new Map<Upstream, AgentGateway>();
const UPSTREAMS: Upstream[] = ['anthropic', 'openai', 'bedrock', 'gemini'];

test.before(async () => {
  vendor = await startMockVendor();
  bedrock = await startMockBedrock();
  gemini = await startMockGemini();
  for (const upstream of UPSTREAMS)
    gateways.set(upstream, await agentGateway({ vendor, bedrock, gemini }, { [CLAUDE_DEFAULT]: upstream }));
});

test.after.always(async () => {
  for (const g of gateways.values()) await g.stop();
  await Promise.all([vendor?.close(), bedrock?.close(), gemini?.close()]);
});

const model = upstreamOf(CLAUDE_DEFAULT);

/** The requests an upstream kind received, and its next answers scripted. */
function upstreamOfKind(upstream: Upstream) {
  if (upstream === 'bedrock' || upstream === 'gemini') {
    const v = () => (upstream === 'bedrock' ? bedrock : gemini);
    return {
      sent: () => v().calls.filter((c) => c.model === model),
      reset: () => v().reset(),
      call: (name: string, input: Json) => v().fault(model, { kind: 'call', name, input }),
      reply: (pieces: string[]) => v().fault(model, { kind: 'reply', pieces }),
    };
  }
  const path = upstream === 'anthropic' ? '/v1/messages' : '/v1/chat/completions';
  return {
    sent: () => vendor.calls.filter((c) => c.path === path && c.model === model),
    reset: () => vendor.reset(),
    call: (name: string, input: Json) => vendor.fault(model, { kind: 'call', name, arguments: JSON.stringify(input) }),
    reply: (pieces: string[]) => vendor.fault(model, { kind: 'reply', pieces }),
  };
}

/** How each kind names a tool's result in what it receives. */
const TOOL_RESULT: Partial<Record<Upstream, RegExp>> = {
  anthropic: /"tool_result"/,
  openai: /"role":"tool"/,
  bedrock: /"toolResult"/,
  gemini: /"functionResponse"/,
};

for (const upstream of UPSTREAMS) {
  const up = upstreamOfKind(upstream);

  test.serial(`Claude Code answers a plain prompt through a ${upstream} upstream`, async (t) => {
    const g = gateways.get(upstream)!;
    const dirs = await agentDirs({});
    t.teardown(dirs.clean);
    up.reset();
    up.reply(['Hello', ' from', ' the', ' gateway.']);
    const run = await claudeCode(g.server.url, g.key, 'Say hello.', dirs);
    t.is(run.code, 0, `${run.stdout}\n${run.stderr}`);
    t.is(run.stdout.trim(), 'Hello from the gateway.');
    const sent = up.sent();
    t.true(sent.length >= 1);
    t.true(sent[0]!.stream, 'Claude Code streams');
    const body = sent[0]!.body;
    if (upstream === 'anthropic') {
      // Its betas reach the vendor with the fields that need them.
      t.regex(String(sent[0]!.headers['anthropic-beta']), /context-management-2025-06-27/);
      t.truthy(body.context_management);
      // The system turn it sends mid-conversation, as it sent it.
      t.true((body.messages as Json[]).some((m) => m.role === 'system'));
    } else if (upstream === 'openai') {
      t.true((body.messages as Json[]).some((m, i) => i > 0 && m.role === 'system'));
    } else {
      // Neither has system turns: the turn's text joins the system text.
      t.regex(JSON.stringify(upstream === 'bedrock' ? body.system : body.systemInstruction), /# Environment/);
    }
  });

  test.serial(
    `Claude Code calls its Read tool and continues with the result through a ${upstream} upstream`,
    async (t) => {
      const g = gateways.get(upstream)!;
      const dirs = await agentDirs({ 'notes.txt': 'The launch code is 4711.\n' });
      t.teardown(dirs.clean);
      up.reset();
      up.call('Read', { file_path: join(dirs.cwd, 'notes.txt') });
      up.reply(['The', ' code', ' is', ' 4711.']);
      const run = await claudeCode(g.server.url, g.key, 'What is the launch code in notes.txt?', dirs);
      t.is(run.code, 0, `${run.stdout}\n${run.stderr}`);
      t.is(run.stdout.trim(), 'The code is 4711.');
      const sent = up.sent();
      t.true(sent.length >= 2, JSON.stringify(sent.map((c) => c.path)));
      const last = JSON.stringify(sent.at(-1)!.body);
      // The tool's result went back to the vendor, with the file's text.
      t.regex(last, TOOL_RESULT[upstream]!);
      t.regex(last, /The launch code is 4711/);
    },
  );
}
