import test from 'ava';
import { makeBot, SERVER_ENV, type Bot } from '../approvals/support.js';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { mcpPost } from '../helpers/http.js';
import { startStatefulUpstream, type StatefulUpstream } from '../helpers/mcp-stateful.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * An agent's upstream session used without a caller session (2025-11-25 calls sent alone) counts
 * as in use while a call runs on it: neither the idle sweep nor the upstream's removal ends it
 * (DELETE) under the call; it ends once the call is answered.
 */
let server: ServedInProcess;
let upstream: StatefulUpstream;
let owner: Person;
let alice: Bot;
const IDLE_MS = 200;
const CALL_MS = 1_500;

test.before(async () => {
  upstream = await startStatefulUpstream();
  server = await serveInProcess({
    env: {
      ...SERVER_ENV,
      SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1',
      SVC_MCP_UPSTREAM_IDLE_MS: String(IDLE_MS),
      SVC_MCP_UPSTREAM_CALL_TIMEOUT_MS: '10000',
    },
  });
  owner = await ownerConsole(server);
  expectStatus(await owner.send('POST', '/mcp-servers', { name: 'st', url: upstream.url }), 201, 'upstream');
  alice = await makeBot(owner, 'alice-bot', [{ actions: ['mcp.*'], domains: ['*'] }]);
});

test.after.always(async () => {
  await stopAndClean(server);
  await upstream?.close();
});

/** A 2025-11-25 tools/call sent without a session: its result, or its error. */
const lone = async (name: string, args: Record<string, unknown> = {}) =>
  (
    await mcpPost(
      server.url,
      alice.key,
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } },
      { revision: '2025-11-25' },
    )
  ).body as { result?: { content: Array<{ text: string }> }; error?: unknown };

test.serial('the idle sweep does not end the session a call without a caller session is running on', async (t) => {
  const deletedBefore = upstream.deleted;
  const started = Date.now();
  const answer = await lone('st__wait', { ms: CALL_MS });
  t.true(Date.now() - started >= CALL_MS, 'the call ran its length');
  t.deepEqual(answer.result?.content[0]?.text, 'waited', JSON.stringify(answer));
  t.is(upstream.deleted, deletedBefore, 'no DELETE was sent while the call ran, though the sweep ran many times');
});

test.serial('removing the upstream ends the session only once the call running on it is answered', async (t) => {
  const deletedBefore = upstream.deleted;
  const call = lone('st__wait', { ms: CALL_MS });
  await new Promise((r) => setTimeout(r, 400));
  const removing = owner.send('DELETE', '/mcp-servers/st');
  await new Promise((r) => setTimeout(r, 300));
  t.is(upstream.deleted, deletedBefore, 'no DELETE while the call runs');
  const answer = await call;
  t.deepEqual(answer.result?.content[0]?.text, 'waited', JSON.stringify(answer));
  expectStatus(await removing, 200, 'removed');
  t.true(upstream.deleted > deletedBefore, 'the session was ended once the call was answered');
});
