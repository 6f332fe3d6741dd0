import test from 'ava';
import { join } from 'node:path';
import { agentDirs, claudeCode } from '../helpers/agents.js';
import type { Json } from '../helpers/http.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { agentGateway, CLAUDE_DEFAULT, upstreamOf, type AgentGateway, type Upstream } from './support.js';

/**
 * Claude Code (print mode, its default model and settings; ANTHROPIC_BASE_URL at a real `svc
 * serve`, an svc key as ANTHROPIC_API_KEY) through the gateway to an Anthropic-kind and a
 * translated OpenAI-kind upstream: a plain prompt answered from a streamed reply, and a turn
 * where the vendor calls Claude Code's Read tool on a file in its working folder and then answers
 * from the file's text, which went back to the vendor.
 */
let vendor: MockVendor;
const gateways = new Map<Upstream, AgentGateway>();
const UPSTREAMS: Upstream[] = ['anthropic', 'openai'];

test.before(async () => {
  vendor = await startMockVendor();
  for (const upstream of UPSTREAMS) gateways.set(upstream, await agentGateway(vendor, { [CLAUDE_DEFAULT]: upstream }));
});

test.after.always(async () => {
  for (const g of gateways.values()) await g.stop();
  await vendor?.close();
});

const model = upstreamOf(CLAUDE_DEFAULT);
const callsOf = (path: string) => vendor.calls.filter((c) => c.path === path && c.model === model);

for (const upstream of UPSTREAMS) {
  const path = upstream === 'anthropic' ? '/v1/messages' : '/v1/chat/completions';

  test.serial(`Claude Code answers a plain prompt through an ${upstream} upstream`, async (t) => {
    const g = gateways.get(upstream)!;
    const dirs = await agentDirs({});
    t.teardown(dirs.clean);
    vendor.reset();
    vendor.fault(model, { kind: 'reply', pieces: ['Hello', ' from', ' the', ' gateway.'] });
    const run = await claudeCode(g.server.url, g.key, 'Say hello.', dirs);
    t.is(run.code, 0, `${run.stdout}\n${run.stderr}`);
    t.is(run.stdout.trim(), 'Hello from the gateway.');
    const sent = callsOf(path);
    t.true(sent.length >= 1);
    t.true(sent[0]!.stream, 'Claude Code streams');
    if (upstream === 'anthropic') {
      // Its betas reach the vendor with the fields that need them.
      t.regex(String(sent[0]!.headers['anthropic-beta']), /context-management-2025-06-27/);
      t.truthy(sent[0]!.body.context_management);
      // The system turn it sends mid-conversation, as it sent it.
      t.true((sent[0]!.body.messages as Json[]).some((m) => m.role === 'system'));
    } else {
      t.true((sent[0]!.body.messages as Json[]).some((m, i) => i > 1 && m.role === 'system'));
    }
  });

  test.serial(
    `Claude Code calls its Read tool and continues with the result through an ${upstream} upstream`,
    async (t) => {
      const g = gateways.get(upstream)!;
      const dirs = await agentDirs({ 'notes.txt': 'The launch code is 4711.\n' });
      t.teardown(dirs.clean);
      vendor.reset();
      vendor.fault(model, {
        kind: 'call',
        name: 'Read',
        arguments: JSON.stringify({ file_path: join(dirs.cwd, 'notes.txt') }),
      });
      vendor.fault(model, { kind: 'reply', pieces: ['The', ' code', ' is', ' 4711.'] });
      const run = await claudeCode(g.server.url, g.key, 'What is the launch code in notes.txt?', dirs);
      t.is(run.code, 0, `${run.stdout}\n${run.stderr}`);
      t.is(run.stdout.trim(), 'The code is 4711.');
      const sent = callsOf(path);
      t.true(sent.length >= 2, JSON.stringify(sent.map((c) => c.path)));
      const last = JSON.stringify(sent.at(-1)!.body.messages);
      // The tool's result went back to the vendor, with the file's text.
      t.regex(last, upstream === 'anthropic' ? /"tool_result"/ : /"role":"tool"/);
      t.regex(last, /The launch code is 4711/);
    },
  );
}
