import test from 'ava';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { makeBot, SERVER_ENV, type Bot } from '../approvals/support.js';
import { expectStatus, ownerConsole } from '../helpers/console.js';
import { bearer, mcpPost } from '../helpers/http.js';
import { ROOT, stopAndClean } from '../helpers/process.js';
import { poll } from '../helpers/wait.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * Issue 34 against a real stateful MCP server, the SDK project's "everything" server
 * (`@modelcontextprotocol/server-everything`, Streamable HTTP): its `toggle-simulated-logging`
 * tool keeps, per MCP session, whether it logs, and answers naming the session. Behind svc, two
 * agents each get their own upstream session (neither stops the other's logging), in a caller
 * session and without one; a caller session's calls stay on one upstream session, which its
 * DELETE ends upstream.
 */
let server: ServedInProcess;
let everything: ChildProcess;
let said = '';
let alice: Bot;
let bob: Bot;

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

test.before(async () => {
  const port = await freePort();
  everything = spawn(
    process.execPath,
    [join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'), 'streamableHttp'],
    { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  everything.stdout!.on('data', (b: Buffer) => (said += b.toString()));
  everything.stderr!.on('data', (b: Buffer) => (said += b.toString()));
  const up = await poll(
    () => said,
    (s) => s.includes('listening on port'),
    { timeoutMs: 20_000, everyMs: 50 },
  );
  if (!up.includes('listening on port')) throw new Error(`server-everything did not start: ${said}`);
  server = await serveInProcess({ env: { ...SERVER_ENV, SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1' } });
  const owner = await ownerConsole(server);
  expectStatus(
    await owner.send('POST', '/mcp-servers', { name: 'ev', url: `http://127.0.0.1:${port}/mcp` }),
    201,
    'upstream',
  );
  alice = await makeBot(owner, 'alice-bot', [{ actions: ['mcp.ev.*'], domains: ['*'] }]);
  bob = await makeBot(owner, 'bob-bot', [{ actions: ['mcp.ev.*'], domains: ['*'] }]);
});

test.after.always(async () => {
  await stopAndClean(server);
  everything?.kill();
});

const TOGGLE = 'ev__toggle-simulated-logging';
/** What the toggle did, and in which upstream session. */
const toggled = (result: unknown): { started: boolean; session: string } => {
  const text = (result as { content: Array<{ text: string }> }).content[0]!.text;
  const m = /^(Started|Stopped) simulated.* for session (\S+?)( |$)/.exec(text);
  if (!m) throw new Error(`not a toggle's answer: ${text}`);
  return { started: m[1] === 'Started', session: m[2]! };
};

async function session(key: string) {
  const client = new Client({ name: 'ev-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
    requestInit: { headers: bearer(key) },
  });
  await client.connect(transport);
  return { client, transport };
}

test.serial("in caller sessions, each agent's toggle is its own upstream session's; DELETE ends it", async (t) => {
  const a = await session(alice.key);
  const b = await session(bob.key);
  const a1 = toggled(await a.client.callTool({ name: TOGGLE, arguments: {} }));
  const b1 = toggled(await b.client.callTool({ name: TOGGLE, arguments: {} }));
  t.true(a1.started);
  t.true(b1.started, "bob's toggle did not stop alice's logging");
  t.not(b1.session, a1.session);
  const a2 = toggled(await a.client.callTool({ name: TOGGLE, arguments: {} }));
  t.deepEqual(a2, { started: false, session: a1.session }, "alice's second call is on her same upstream session");
  t.false(toggled(await b.client.callTool({ name: TOGGLE, arguments: {} })).started);
  await a.transport.terminateSession();
  await a.client.close();
  const ended = await poll(
    () => said.includes(`Received session termination request for session ${a1.session}`),
    (yes) => yes,
    { timeoutMs: 5_000, everyMs: 20 },
  );
  t.true(ended, "alice's DELETE ended her upstream session");
  await b.transport.terminateSession();
  await b.client.close();
});

test.serial("without a caller session, each agent's toggle is its own upstream session's", async (t) => {
  const lone = async (key: string) =>
    toggled(
      (
        await mcpPost(
          server.url,
          key,
          { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: TOGGLE, arguments: {} } },
          { revision: '2025-11-25' },
        )
      ).body.result,
    );
  const a1 = await lone(alice.key);
  const b1 = await lone(bob.key);
  t.true(a1.started);
  t.true(b1.started);
  t.not(a1.session, b1.session);
  t.deepEqual(await lone(alice.key), { started: false, session: a1.session });
  t.deepEqual(await lone(bob.key), { started: false, session: b1.session });
});
