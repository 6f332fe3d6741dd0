import test from 'ava';
import { expectStatus, ownerConsole } from '../helpers/console.js';
import { mcpPost } from '../helpers/http.js';
import { startMcpUpstream, type McpUpstream } from '../helpers/mcp-upstream.js';
import { stopAndClean } from '../helpers/process.js';
import { poll } from '../helpers/wait.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { makeBot, SERVER_ENV, type Bot } from '../approvals/support.js';

/**
 * Found by the soak (issue 15): calls without a session share one client of each upstream. When
 * one call failed on the way (a connection the upstream closed), that shared client was closed at
 * once, and every other call in flight on it was answered "Connection closed", though the
 * upstream had run some of them: an agent told that a tool call failed may well send it again.
 * A failed client is now only dropped from the pool: new calls get a new one, and the calls still
 * on the old one are answered before it closes.
 */
let server: ServedInProcess;
let upstream: McpUpstream;
let bot: Bot;

test.before(async () => {
  upstream = await startMcpUpstream({ secret: 'upstream-secret-1', faults: true });
  server = await serveInProcess({ env: { ...SERVER_ENV, SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1' } });
  const owner = await ownerConsole(server);
  bot = await makeBot(owner, 'files-bot', [{ actions: ['mcp.files.*'], domains: ['*'] }]);
  expectStatus(
    await owner.send('POST', '/mcp-servers', { name: 'files', url: upstream.url, secret: 'upstream-secret-1' }),
    201,
    'upstream',
  );
});

test.after.always(async () => {
  await stopAndClean(server);
  await upstream?.close();
});

/** A lone tools/call, as a client without a session sends it: served on the shared client. */
const toolCall = (name: string, args: Record<string, unknown> = {}) =>
  mcpPost(
    server.url,
    bot.key,
    { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } },
    { revision: '2025-11-25' },
  );

/** Resolves once the upstream has received a call of that tool; fails after `ms`. */
async function received(tool: string, ms = 10_000): Promise<void> {
  const seen = await poll(
    () => upstream.calls.some((c) => c.name === tool),
    (yes) => yes,
    { timeoutMs: ms, everyMs: 10 },
  );
  if (!seen) throw new Error(`the upstream never received ${tool}`);
}

test('a call that fails on the shared client does not fail the calls in flight beside it', async (t) => {
  const warm = await toolCall('files__echo', { text: 'warm' });
  t.deepEqual(warm.body.result?.content, [{ type: 'text', text: 'warm' }]);

  const held = toolCall('files__hold');
  await received('hold');
  const failed = await toolCall('files__hang_up');
  t.is(failed.status, 200);
  t.is(failed.body.error?.code, -32003, failed.text);
  t.true(upstream.calls.some((c) => c.name === 'hang_up'));

  upstream.release();
  const answer = await held;
  t.is(answer.status, 200);
  t.is(answer.body.error, undefined, answer.text);
  t.deepEqual(answer.body.result?.content, [{ type: 'text', text: 'held' }]);

  // And the next call is served, on a new client.
  const next = await toolCall('files__echo', { text: 'after' });
  t.deepEqual(next.body.result?.content, [{ type: 'text', text: 'after' }]);
});
