import test from 'ava';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { makeBot, SERVER_ENV, type Bot } from '../approvals/support.js';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { bearer, mcpPost } from '../helpers/http.js';
import { listenLoopback } from '../helpers/loopback-http.js';
import { startStatefulUpstream, type StatefulUpstream } from '../helpers/mcp-stateful.js';
import { stopAndClean } from '../helpers/process.js';
import { poll } from '../helpers/wait.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * Issue 34: each agent has upstream sessions of its own (one per caller session, or one per
 * agent without a session), reused for the caller session's life and ended (DELETE) when it
 * ends or idles out; deadlines on listing, adding and calling; adding a server says why it
 * could not be used.
 */
let server: ServedInProcess;
let upstream: StatefulUpstream;
let owner: Person;
let alice: Bot;
let bob: Bot;
const IDLE_MS = 1_500;
const TIMEOUT_MS = 1_000;
const PER_AGENT = 6;

test.before(async () => {
  upstream = await startStatefulUpstream();
  server = await serveInProcess({
    env: {
      ...SERVER_ENV,
      SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1',
      SVC_MCP_UPSTREAM_IDLE_MS: String(IDLE_MS),
      SVC_MCP_UPSTREAM_TIMEOUT_MS: String(TIMEOUT_MS),
      SVC_MCP_UPSTREAM_CALL_TIMEOUT_MS: '1000',
      SVC_MCP_UPSTREAM_SESSIONS_PER_AGENT: String(PER_AGENT),
    },
  });
  owner = await ownerConsole(server);
  expectStatus(await owner.send('POST', '/mcp-servers', { name: 'st', url: upstream.url }), 201, 'upstream');
  alice = await makeBot(owner, 'alice-bot', [{ actions: ['mcp.*'], domains: ['*'] }]);
  bob = await makeBot(owner, 'bob-bot', [{ actions: ['mcp.*'], domains: ['*'] }]);
});

test.after.always(async () => {
  await stopAndClean(server);
  await upstream?.close();
});

const text = (r: unknown) => (r as { content: Array<{ text: string }> }).content[0]!.text;

async function session(key: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'iso-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
    requestInit: { headers: bearer(key) },
  });
  await client.connect(transport);
  return { client, transport };
}

async function modern(key: string): Promise<ModernClient> {
  const client = new ModernClient(
    { name: 'iso-test-2026', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(new ModernTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: bearer(key) } }));
  return client;
}

/** A 2025-11-25 tools/call sent without a session. */
const lone = async (key: string, name: string, args: Record<string, unknown> = {}) => {
  const reply = await mcpPost(
    server.url,
    key,
    { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } },
    { revision: '2025-11-25' },
  );
  return text(reply.body.result);
};

test.serial("within sessions, agent B never sees what agent A's upstream session holds", async (t) => {
  const a = await session(alice.key);
  const b = await session(bob.key);
  await a.client.callTool({ name: 'st__remember', arguments: { value: '/secret-of-agent-A?token=s3cr3t' } });
  t.is(text(await b.client.callTool({ name: 'st__recall', arguments: {} })), 'nothing');
  t.is(text(await a.client.callTool({ name: 'st__recall', arguments: {} })), '/secret-of-agent-A?token=s3cr3t');
  // A second session of the same agent is a session of its own upstream too.
  const a2 = await session(alice.key);
  t.is(text(await a2.client.callTool({ name: 'st__recall', arguments: {} })), 'nothing');
  for (const s of [a, b, a2]) {
    await s.transport.terminateSession();
    await s.client.close();
  }
});

test.serial("without a session (2025-11-25 and 2026-07-28), agent B never sees agent A's state", async (t) => {
  await lone(alice.key, 'st__remember', { value: 'alice-lone' });
  t.is(await lone(bob.key, 'st__recall'), 'nothing');
  t.is(await lone(alice.key, 'st__recall'), 'alice-lone', "the agent's upstream session is kept between requests");

  const am = await modern(alice.key);
  const bm = await modern(bob.key);
  await am.callTool({ name: 'st__remember', arguments: { value: 'alice-2026' } });
  t.is(text(await bm.callTool({ name: 'st__recall', arguments: {} })), 'nothing');
  t.is(text(await am.callTool({ name: 'st__recall', arguments: {} })), 'alice-2026');
  await am.close();
  await bm.close();
});

test.serial(
  '300 calls in one session open one upstream session, cost the upstream one request each, and DELETE ends it',
  async (t) => {
    const openedBefore = upstream.opened;
    const s = await session(alice.key);
    await s.client.listTools();
    const deletedBefore = upstream.deleted;
    await s.client.callTool({ name: 'st__remember', arguments: { value: 'kept across 300 calls' } });
    t.is(upstream.opened, openedBefore + 1, 'the session opened one upstream session on first use');
    const from = upstream.requests.length;
    for (let i = 0; i < 300; i += 1)
      t.is(text(await s.client.callTool({ name: 'st__recall', arguments: {} })), 'kept across 300 calls');
    t.is(upstream.opened, openedBefore + 1, 'no other upstream session was opened');
    const calls = upstream.requests.slice(from).filter((r) => r.method === 'tools/call');
    t.is(calls.length, 300);
    const ids = new Set(calls.map((r) => r.session));
    t.is(ids.size, 1, 'all on one upstream session');
    // Besides the calls, only the pin check's listing (at most one every 10 s) reached that session.
    const mine = upstream.requests.slice(from).filter((r) => ids.has(r.session));
    t.deepEqual(
      mine.filter((r) => r.method !== 'tools/call' && r.method !== 'tools/list'),
      [],
      'no initialize, no notification, no GET per call',
    );
    t.true(mine.length <= 300 + 2, `${mine.length} upstream requests for 300 calls`);
    await s.transport.terminateSession();
    await s.client.close();
    const ended = await poll(
      () => upstream.requests.some((r) => r.http === 'DELETE' && ids.has(r.session)),
      (yes) => yes,
      { timeoutMs: 5_000, everyMs: 20 },
    );
    t.true(ended, "the caller's DELETE ended its upstream session (a DELETE upstream)");
    t.true(upstream.deleted > deletedBefore);
  },
);

test.serial("an agent's upstream session without a caller session ends (DELETE) once idle", async (t) => {
  await lone(bob.key, 'st__remember', { value: 'soon gone' });
  // The upstream session that call went on, and its DELETE (not another session's ending).
  const sid = upstream.requests.filter((r) => r.method === 'tools/call').at(-1)?.session;
  t.truthy(sid);
  const ended = await poll(
    () => upstream.requests.some((r) => r.http === 'DELETE' && r.session === sid),
    (done) => done,
    { timeoutMs: IDLE_MS + 20_000, everyMs: 50 },
  );
  t.true(ended, 'the idle session was ended upstream');
  t.is(await lone(bob.key, 'st__recall'), 'nothing', 'the next request opened a new one');
});

test.serial(
  'a call past its deadline fails naming it, the upstream is told to cancel, and its session lives on',
  async (t) => {
    const before = upstream.cancelled;
    const started = Date.now();
    const s = await session(alice.key);
    await s.client.callTool({ name: 'st__remember', arguments: { value: 'still here' } });
    const err = await t.throwsAsync(s.client.callTool({ name: 'st__wait', arguments: {} }));
    t.true(Date.now() - started < 5_000);
    t.regex((err as McpError).message, /did not answer within 1000 ms/);
    t.like((err as McpError).data, { type: 'upstream_failure', cause: 'timeout' });
    const cancelled = await poll(
      () => upstream.cancelled,
      (n) => n > before,
      { timeoutMs: 20_000, everyMs: 20 },
    );
    t.true(cancelled > before, JSON.stringify(upstream.requests.slice(-6)));
    t.is(
      text(await s.client.callTool({ name: 'st__recall', arguments: {} })),
      'still here',
      'a deadline passed does not end the upstream session',
    );
    await s.transport.terminateSession();
    await s.client.close();
  },
);

test.serial('past the cap of upstream sessions per agent, a call is refused naming the cap', async (t) => {
  const opened = [];
  let refused: McpError | undefined;
  for (let i = 0; i < PER_AGENT + 1 && !refused; i += 1) {
    const s = await session(alice.key);
    opened.push(s);
    try {
      await s.client.callTool({ name: 'st__recall', arguments: {} });
    } catch (err) {
      refused = err as McpError;
    }
  }
  t.truthy(refused, 'refused before the cap was passed');
  t.like(refused!.data, { type: 'upstream_sessions_full', setting: 'mcp.upstreamSessionsPerAgent', cap: PER_AGENT });
  t.regex(refused!.message, /Too many upstream MCP sessions/);
  // Another agent is not held back by this one's cap.
  t.is(await lone(bob.key, 'st__recall'), 'nothing');
  for (const s of opened) {
    await s.transport.terminateSession();
    await s.client.close();
  }
});

test.serial("a caller's cancellation of a proxied call reaches the upstream", async (t) => {
  const before = upstream.cancelled;
  const calls = () => upstream.requests.filter((r) => r.method === 'tools/call').length;
  const s = await session(alice.key);
  const callsBefore = calls();
  const stop = new AbortController();
  const pending = s.client.callTool({ name: 'st__wait', arguments: {} }, undefined, { signal: stop.signal });
  // This call reached the upstream (earlier tests' calls are counted too).
  await poll(calls, (n) => n > callsBefore);
  await new Promise((resolve) => setTimeout(resolve, 100));
  stop.abort('the person changed their mind');
  await t.throwsAsync(pending);
  const cancelled = await poll(
    () => upstream.cancelled,
    (n) => n > before,
    { timeoutMs: 20_000, everyMs: 20 },
  );
  t.true(cancelled > before, 'the upstream was sent notifications/cancelled');
  await s.transport.terminateSession();
  await s.client.close();
});

/** A loopback HTTP server answering every request with `answer` (or never, without one). */
const fake = (answer?: { status: number; type: string; body: string }) =>
  listenLoopback((req, res) => {
    req.resume();
    if (answer) res.writeHead(answer.status, { 'content-type': answer.type }).end(answer.body);
  });

test.serial(
  'adding a server that is not usable answers why: the HTTP status and body, no answer, not MCP, TLS, DNS, protocol version',
  async (t) => {
    const forbidden = await fake({ status: 403, type: 'application/json', body: '{"error":"forbidden: bad token"}' });
    const notMcp = await fake({ status: 200, type: 'application/json', body: '{"hello":"world"}' });
    const hanging = await fake();
    // Answers initialize with a protocol version no one speaks.
    const ancient = await listenLoopback((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const id = (JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { id?: unknown }).id ?? null;
        const result = { protocolVersion: '1999-01-01', capabilities: {}, serverInfo: { name: 'old', version: '0' } };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result }));
      });
    });
    const untrusted = await listenLoopback((_req, res) => res.writeHead(200).end('{}'), { tls: true });
    try {
      const f = expectStatus(
        await owner.send('POST', '/mcp-servers', { name: 'forbidden', url: forbidden.url }),
        201,
        'add',
      );
      t.is(f.body.pinnedTools, null);
      t.like(f.body.problem, { cause: 'http_status', status: 403 });
      t.regex(f.body.problem.body, /forbidden: bad token/);

      const n = expectStatus(await owner.send('POST', '/mcp-servers', { name: 'notmcp', url: notMcp.url }), 201, 'add');
      t.like(n.body.problem, { cause: 'not_mcp' });

      const started = Date.now();
      const h = expectStatus(
        await owner.send('POST', '/mcp-servers', { name: 'hanging', url: hanging.url }),
        201,
        'add',
      );
      t.true(Date.now() - started < TIMEOUT_MS * 3 + 1_000, 'adding waited the deadline, not a minute');
      t.like(h.body.problem, { cause: 'timeout' });

      const old = expectStatus(
        await owner.send('POST', '/mcp-servers', { name: 'ancient', url: ancient.url }),
        201,
        'add',
      );
      t.like(old.body.problem, { cause: 'protocol_version' });
      t.regex(old.body.problem.message, /1999-01-01/);

      // An https upstream whose certificate svc does not trust, and a name that does not resolve.
      const tls = expectStatus(
        await owner.send('POST', '/mcp-servers', { name: 'untrusted', url: untrusted.url }),
        201,
        'add',
      );
      t.like(tls.body.problem, { cause: 'tls' });
      const dns = expectStatus(
        await owner.send('POST', '/mcp-servers', { name: 'nowhere', url: 'https://svc-test-nowhere.invalid/mcp' }),
        201,
        'add',
      );
      t.like(dns.body.problem, { cause: 'dns' });

      // The owner's view of one says why too; an agent's listing is held back by none of them.
      const view = expectStatus(await owner.get('/mcp-servers/forbidden/tools'), 200, 'view');
      t.is(view.body.reachable, false);
      t.like(view.body.problem, { cause: 'http_status', status: 403 });
      // Listed by an agent of its own, with only the 403 and the silent one beside the good one:
      // each upstream of the listing takes one of the agent's upstream sessions (at most
      // PER_AGENT), and another agent's idle ones may not have been swept yet on a loaded machine.
      for (const name of ['notmcp', 'untrusted', 'nowhere', 'ancient'])
        await owner.send('DELETE', `/mcp-servers/${name}`);
      const carol = await makeBot(owner, 'carol-bot', [{ actions: ['mcp.*'], domains: ['*'] }]);
      const listedAt = Date.now();
      const s = await session(carol.key);
      const names = (await s.client.listTools()).tools.map((x) => x.name);
      t.true(Date.now() - listedAt < TIMEOUT_MS * 3 + 1_000, 'a late upstream hid only its own tools');
      t.true(names.includes('st__recall'), names.join());
      t.false(names.some((x) => x.startsWith('hanging__')));
      // A call to the one that answered 403 says so, not "could not be reached".
      const err = await t.throwsAsync(s.client.callTool({ name: 'forbidden__anything', arguments: {} }));
      t.like((err as McpError).data, { type: 'upstream_failure', cause: 'http_status', status: 403 });
      await s.transport.terminateSession();
      await s.client.close();
    } finally {
      for (const name of ['forbidden', 'notmcp', 'hanging', 'untrusted', 'nowhere', 'ancient'])
        await owner.send('DELETE', `/mcp-servers/${name}`);
      await Promise.all([forbidden.close(), notMcp.close(), hanging.close(), untrusted.close(), ancient.close()]);
    }
  },
);
