import test, { type ExecutionContext } from 'ava';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { makeBot, SERVER_ENV, type Bot } from '../approvals/support.js';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { bearer, mcpPost } from '../helpers/http.js';
import { startMcpUpstream, type McpUpstream } from '../helpers/mcp-upstream.js';
import { stopAndClean, svc } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * /mcp serves requests without a session (2025-11-25 stateless POSTs, every 2026-07-28 request)
 * on MCP servers it reuses from one request to the next (src/mcp/reuse.ts). A reused server
 * never lets one caller see another's tools or act as another; and nothing about an agent's
 * standing is kept in it: a freeze written by another process (the spawned `svc freeze --local`)
 * is seen by the very next call, which reaches no upstream. Serial: the CLI opens the store.
 * Also how those requests are answered: a JSON answer whole, with its length, at both revisions;
 * and a 2025-11-25 request that is not one plain JSON-RPC request (a batch, a notification, an
 * unsupported version, an Accept without event streams) answered by the SDK's transport as before.
 */
const REVISION = '2026-07-28';
let server: ServedInProcess;
let upstream: McpUpstream;
let owner: Person;
/** May call files__echo only. */
let echoer: Bot;
/** May call files__add only. */
let adder: Bot;

test.before(async () => {
  upstream = await startMcpUpstream({ secret: 'reuse-secret-1' });
  server = await serveInProcess({ env: { ...SERVER_ENV, SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1' } });
  owner = await ownerConsole(server);
  expectStatus(
    await owner.send('POST', '/mcp-servers', {
      name: 'files',
      url: upstream.url,
      secret: 'reuse-secret-1',
      allowTools: ['echo', 'add'],
    }),
    201,
    'upstream',
  );
  echoer = await makeBot(owner, 'reuse-echoer', [{ actions: ['mcp.files.echo'], domains: ['*'] }]);
  adder = await makeBot(owner, 'reuse-adder', [{ actions: ['mcp.files.add'], domains: ['*'] }]);
});

test.after.always(async () => {
  await stopAndClean(server);
  await upstream?.close();
});

let nextId = 1;
/** One stateless 2025-11-25 JSON-RPC request (no initialize, no session), answered as JSON. */
async function stateless(key: string, method: string, params: Record<string, unknown>) {
  const res = await mcpPost(
    server.url,
    key,
    { jsonrpc: '2.0', id: nextId++, method, params },
    { revision: '2025-11-25' },
  );
  if (res.status !== 200) throw new Error(`${method}: ${res.status} ${res.text}`);
  return res.body as { result?: Record<string, unknown>; error?: { code: number; data?: Record<string, unknown> } };
}

async function modernClient(key: string): Promise<ModernClient> {
  const client = new ModernClient(
    { name: 'svc-reuse-test', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: REVISION } } },
  );
  await client.connect(new ModernTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: bearer(key) } }));
  return client;
}

const proxiedNames = (tools: unknown) =>
  (tools as Array<{ name: string }>).map((x) => x.name).filter((n) => n.startsWith('files__'));
const AUTHORIZE = { type: 'email', summary: 'reuse test' };

/** What one caller sees and does, checked against what it alone may: its tools, its identity, its calls. */
async function oneRound(t: ExecutionContext, round: number) {
  const callers = [
    { bot: echoer, own: 'files__echo', other: 'files__add', args: { text: `r${round}` } },
    { bot: adder, own: 'files__add', other: 'files__echo', args: { a: round, b: 1 } },
  ];
  await Promise.all(
    callers.map(async (c) => {
      // 2025-11-25, stateless
      const listed = await stateless(c.bot.key, 'tools/list', {});
      t.deepEqual(proxiedNames(listed.result?.tools), [c.own], `2025 tools/list of ${c.bot.agentId}`);
      const acted = await stateless(c.bot.key, 'tools/call', { name: 'authorize_action', arguments: AUTHORIZE });
      t.is((acted.result?.structuredContent as { agentId?: string }).agentId, c.bot.agentId, 'acts as itself (2025)');
      const mine = await stateless(c.bot.key, 'tools/call', { name: c.own, arguments: c.args });
      t.not(mine.result?.isError, true, `2025 ${c.own} by ${c.bot.agentId}: ${JSON.stringify(mine)}`);
      const theirs = await stateless(c.bot.key, 'tools/call', { name: c.other, arguments: {} });
      t.true(theirs.result?.isError === true, `2025 ${c.other} by ${c.bot.agentId} is denied`);
      t.regex(JSON.stringify(theirs.result?.content), /Denied by the gate/);
    }),
  );
}

test.serial(
  'two callers interleaving on reused servers each see only their own tools and act only as themselves, at both revisions',
  async (t) => {
    const before = upstream.calls.length;
    for (let round = 0; round < 3; round += 1) await oneRound(t, round);

    const modern = await Promise.all([modernClient(echoer.key), modernClient(adder.key)]);
    try {
      for (let round = 0; round < 3; round += 1) {
        await Promise.all(
          modern.map(async (client, i) => {
            const bot = i === 0 ? echoer : adder;
            const own = i === 0 ? 'files__echo' : 'files__add';
            const other = i === 0 ? 'files__add' : 'files__echo';
            t.deepEqual(proxiedNames((await client.listTools()).tools), [own], `2026 tools/list of ${bot.agentId}`);
            const acted = await client.callTool({ name: 'authorize_action', arguments: AUTHORIZE });
            t.is((acted.structuredContent as { agentId?: string }).agentId, bot.agentId, 'acts as itself (2026)');
            const mine = await client.callTool({
              name: own,
              arguments: i === 0 ? { text: `m${round}` } : { a: round, b: 2 },
            });
            t.not(mine.isError, true, `2026 ${own}: ${JSON.stringify(mine)}`);
            const theirs = await client.callTool({ name: other, arguments: {} });
            t.true(theirs.isError === true, `2026 ${other} by ${bot.agentId} is denied`);
          }),
        );
      }
    } finally {
      await Promise.all(modern.map((c) => c.close()));
    }
    // Each caller's own calls reached the upstream (3 rounds x 2 callers x 2 eras), nothing else.
    const made = upstream.calls.slice(before);
    t.is(made.length, 12);
    t.is(made.filter((c) => c.name === 'echo').length, 6);
    t.is(made.filter((c) => c.name === 'add').length, 6);
  },
);

test.serial(
  'a freeze written by the spawned svc freeze --local is seen by the very next call through a reused server',
  async (t) => {
    const target = await makeBot(owner, 'reuse-frozen', [{ actions: ['mcp.files.echo'], domains: ['*'] }]);
    const client = await modernClient(target.key);
    try {
      // Warm: both eras' servers of this caller have served (and are idle for reuse).
      for (let i = 0; i < 2; i += 1) {
        const legacy = await stateless(target.key, 'tools/call', { name: 'files__echo', arguments: { text: 'warm' } });
        t.not(legacy.result?.isError, true, JSON.stringify(legacy));
        t.not((await client.callTool({ name: 'files__echo', arguments: { text: 'warm' } })).isError, true);
      }
      const res = await svc([
        'freeze',
        '--local',
        '--agent',
        target.agentId,
        '--reason',
        'reuse test',
        '--data-dir',
        server.dataDir,
        '--json',
      ]);
      t.is(res.code, 0, res.stderr);
      const before = upstream.calls.length;

      const legacy = await stateless(target.key, 'tools/call', { name: 'files__echo', arguments: { text: 'after' } });
      t.is(legacy.error?.code, -32001, JSON.stringify(legacy));
      t.like(legacy.error?.data, { type: 'agent_stopped', agentId: target.agentId });
      const listed = await stateless(target.key, 'tools/list', {});
      t.deepEqual(proxiedNames(listed.result?.tools), [], 'a stopped agent lists only the gate tools (2025)');

      const err = await t.throwsAsync(client.callTool({ name: 'files__echo', arguments: { text: 'after' } }));
      t.like((err as { data?: unknown }).data, { type: 'agent_stopped', agentId: target.agentId });
      t.deepEqual(
        proxiedNames((await client.listTools()).tools),
        [],
        'a stopped agent lists only the gate tools (2026)',
      );

      t.is(upstream.calls.length, before, 'nothing reached the upstream after the freeze');
    } finally {
      await client.close();
    }
  },
);

test.serial('a JSON answer at /mcp comes whole, with its length (not chunked), in both eras', async (t) => {
  const legacy = await mcpPost(
    server.url,
    echoer.key,
    {
      jsonrpc: '2.0',
      id: nextId++,
      method: 'tools/call',
      params: { name: 'files__echo', arguments: { text: 'whole' } },
    },
    { revision: '2025-11-25' },
  );
  t.is(legacy.status, 200);
  t.is(legacy.headers['content-type'], 'application/json');
  t.is(legacy.headers['content-length'], String(Buffer.byteLength(legacy.text)));
  t.is(legacy.headers['transfer-encoding'], undefined);
  t.is((legacy.body as { result: { content: Array<{ text: string }> } }).result.content[0]!.text, 'whole');
  const modern = await mcpPost(
    server.url,
    echoer.key,
    {
      jsonrpc: '2.0',
      id: nextId++,
      method: 'tools/list',
      params: {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': REVISION,
          'io.modelcontextprotocol/clientInfo': { name: 'svc-reuse-test', version: '1.0.0' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    },
    { revision: REVISION, headers: { 'mcp-method': 'tools/list' } },
  );
  t.is(modern.status, 200, modern.text);
  t.is(modern.headers['content-length'], String(Buffer.byteLength(modern.text)));
  t.is(modern.headers['transfer-encoding'], undefined);
  t.true(proxiedNames((modern.body as { result: { tools: unknown } }).result.tools).includes('files__echo'));
});

test.serial(
  'a 2025-11-25 request without a session that is not one plain JSON-RPC request gets the SDK transport’s answer',
  async (t) => {
    const send = (headers: Record<string, string>, json: unknown) => mcpPost(server.url, echoer.key, json, { headers });
    const list = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/list', params: {} });
    const unsupported = await send({ 'mcp-protocol-version': '2024-01-01' }, list(nextId++));
    t.is(unsupported.status, 400);
    t.is((unsupported.body as { error: { code: number } }).error.code, -32000);
    t.regex(
      (unsupported.body as { error: { message: string } }).error.message,
      /Unsupported protocol version: 2024-01-01/,
    );
    const jsonOnly = await send({ accept: 'application/json' }, list(nextId++));
    t.is(jsonOnly.status, 406);
    const notification = await send({}, { jsonrpc: '2.0', method: 'notifications/initialized' });
    t.is(notification.status, 202);
    const batch = await send({}, [list(101), list(102)]);
    t.is(batch.status, 200, batch.text);
    t.deepEqual(
      (batch.body as Array<{ id: number; result: { tools: unknown } }>).map((m) => [
        m.id,
        proxiedNames(m.result.tools).includes('files__echo'),
      ]),
      [
        [101, true],
        [102, true],
      ],
    );
    const invalid = await send({}, { jsonrpc: '2.0', id: 'x', method: 7 });
    t.is(invalid.status, 400);
    t.is((invalid.body as { error: { code: number } }).error.code, -32600);
  },
);
