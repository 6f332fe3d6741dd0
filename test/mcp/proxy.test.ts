import test from 'ava';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { assertError } from '../helpers/http.js';
import { startMcpUpstream, type McpUpstream } from '../helpers/mcp-upstream.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { makeBot, SERVER_ENV, type Bot } from '../approvals/support.js';

/**
 * The MCP proxy (issue 7): a workspace's upstream MCP servers, their tools at /mcp as
 * <server>__<tool>, each call gated as the action mcp.<server>.<tool> against the agent's
 * mandate, and a stopped agent's call refused before the upstream is contacted (it counts).
 */
let server: ServedInProcess;
let upstream: McpUpstream;
let owner: Person;
let bot: Bot;

async function connect(key: string): Promise<Client> {
  const client = new Client({ name: 'proxy-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  return client;
}

test.before(async () => {
  upstream = await startMcpUpstream({ secret: 'upstream-secret-1' });
  server = await serveInProcess({ env: { ...SERVER_ENV, SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1' } });
  owner = await ownerConsole(server);
  bot = await makeBot(owner, 'files-bot', [{ actions: ['mcp.files.echo', 'mcp.files.add'], domains: ['*'] }]);
  const added = expectStatus(
    await owner.send('POST', '/mcp-servers', {
      name: 'files',
      url: upstream.url,
      secret: 'upstream-secret-1',
      allowTools: ['echo', 'add'],
    }),
    201,
    'upstream',
  );
  t_like(added.body);
});

function t_like(body: Record<string, unknown>): void {
  if (body.hasSecret !== true || 'secretSealed' in body || JSON.stringify(body).includes('upstream-secret-1'))
    throw new Error(`the secret leaked or was lost: ${JSON.stringify(body)}`);
}

test.after.always(async () => {
  await stopAndClean(server);
  await upstream?.close();
});

test.serial("the upstream's allowed tools appear as <server>__<tool> beside the gate's", async (t) => {
  const client = await connect(bot.key);
  const names = (await client.listTools()).tools.map((x) => x.name);
  t.deepEqual(names, ['authorize_action', 'get_action', 'settle_action', 'files__echo', 'files__add']);
  await client.close();
  const listed = await owner.get('/mcp-servers');
  t.like(listed.body.data[0], {
    name: 'files',
    url: upstream.url,
    hasSecret: true,
    allowTools: ['echo', 'add'],
    unprefixed: false,
  });
  t.false(listed.text.includes('upstream-secret-1'), 'the secret is never shown again');
});

test.serial(
  "a call the mandate allows is forwarded with the upstream's secret, and is an action in the ledger",
  async (t) => {
    const client = await connect(bot.key);
    const res = await client.callTool({ name: 'files__add', arguments: { a: 2, b: 40 } });
    t.deepEqual(res.content, [{ type: 'text', text: '42' }]);
    t.deepEqual(upstream.calls.at(-1), { name: 'add', args: { a: 2, b: 40 } });
    const records = await owner.ledger();
    t.true(
      records.some(
        (r) => r.kind === 'action.allowed' && r.data.type === 'mcp.files.add' && r.actor === `agent:${bot.agentId}`,
      ),
    );
    await client.close();
  },
);

test.serial("the upstream's progress and log messages are relayed while a proxied call runs", async (t) => {
  expectStatus(
    await owner.send('PUT', `/agents/${bot.agentId}/mandate`, {
      rules: [{ actions: ['mcp.files.echo', 'mcp.files.add', 'mcp.files.slow'], domains: ['*'] }],
      confirmBroaden: true,
    }),
    200,
    'mandate',
  );
  expectStatus(await owner.send('DELETE', '/mcp-servers/files'), 200, 'remove');
  expectStatus(
    await owner.send('POST', '/mcp-servers', {
      name: 'files',
      url: upstream.url,
      secret: 'upstream-secret-1',
      allowTools: ['echo', 'add', 'slow'],
    }),
    201,
    'upstream',
  );
  const client = await connect(bot.key);
  const logs: unknown[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    logs.push(n.params);
  });
  const progress: Array<{ progress: number; total?: number }> = [];
  const res = await client.callTool({ name: 'files__slow', arguments: {} }, undefined, {
    onprogress: (p) => {
      progress.push(p);
    },
  });
  t.deepEqual(res.content, [{ type: 'text', text: 'done' }]);
  t.deepEqual(
    progress.map((p) => [p.progress, p.total]),
    [
      [1, 3],
      [2, 3],
      [3, 3],
    ],
  );
  t.deepEqual(logs, [{ level: 'info', logger: 'fixture', data: 'working' }]);
  await client.close();
});

test.serial('a tool the mandate does not cover is denied by the gate and never reaches the upstream', async (t) => {
  const narrow = await makeBot(owner, 'echo-only', [{ actions: ['mcp.files.echo'], domains: ['*'] }]);
  const client = await connect(narrow.key);
  const before = upstream.calls.length;
  const res = await client.callTool({ name: 'files__add', arguments: { a: 1, b: 1 } });
  t.true(res.isError);
  t.regex((res.content as Array<{ text: string }>)[0]!.text, /Denied by the gate: .*type_not_allowed/);
  t.is(upstream.calls.length, before);
  const hidden = await t.throwsAsync(client.callTool({ name: 'files__secret_tool', arguments: {} }));
  t.is((hidden as McpError).code, -32001, 'a tool outside the allow-list does not exist here');
  await client.close();
});

test.serial(
  "a stopped agent's proxied call is a JSON-RPC error with the fix, and the upstream is contacted zero times",
  async (t) => {
    expectStatus(await owner.send('POST', `/agents/${bot.agentId}/stop`, { reason: 'proxy test' }), 200, 'stop');
    const client = await connect(bot.key);
    const before = upstream.calls.length;
    const err = await t.throwsAsync(client.callTool({ name: 'files__echo', arguments: { text: 'hi' } }));
    t.true(err instanceof McpError);
    t.is((err as McpError).code, -32001);
    t.like((err as McpError).data, { type: 'agent_stopped', hold: 'owner', agentId: bot.agentId });
    t.regex(String(((err as McpError).data as { fix: string }).fix), /restart/i);
    t.is(upstream.calls.length, before, 'nothing was sent upstream');
    await client.close();
    expectStatus(await owner.send('POST', `/agents/${bot.agentId}/restart`), 200, 'restart');
  },
);

test.serial('an unprefixed upstream offers its tools under their own names, gated all the same', async (t) => {
  expectStatus(
    await owner.send('POST', '/mcp-servers', {
      name: 'plain',
      url: upstream.url,
      secret: 'upstream-secret-1',
      allowTools: ['echo'],
      unprefixed: true,
    }),
    201,
    'plain upstream',
  );
  const allowed = await makeBot(owner, 'plain-bot', [{ actions: ['mcp.plain.echo'], domains: ['*'] }]);
  const client = await connect(allowed.key);
  t.true((await client.listTools()).tools.some((x) => x.name === 'echo'));
  const res = await client.callTool({ name: 'echo', arguments: { text: 'plain hello' } });
  t.deepEqual(res.content, [{ type: 'text', text: 'plain hello' }]);
  t.true((await owner.ledger()).some((r) => r.kind === 'action.allowed' && r.data.type === 'mcp.plain.echo'));
  await client.close();
  expectStatus(await owner.send('DELETE', '/mcp-servers/plain'), 200, 'remove plain');
});

test.serial('an upstream that does not answer hides only its own tools', async (t) => {
  expectStatus(
    await owner.send('POST', '/mcp-servers', { name: 'dead', url: 'http://127.0.0.1:9/mcp' }),
    201,
    'dead upstream',
  );
  const client = await connect(bot.key);
  const names = (await client.listTools()).tools.map((x) => x.name);
  t.true(names.includes('files__echo'));
  t.false(names.some((n) => n.startsWith('dead__')));
  await client.close();
  expectStatus(await owner.send('DELETE', '/mcp-servers/dead'), 200, 'remove dead');
});

test.serial(
  'only owners and admins manage upstream servers; names are checked; removal takes the tools away',
  async (t) => {
    assertError(
      t,
      await owner.send('POST', '/mcp-servers', { name: 'bad name!', url: upstream.url }),
      400,
      'invalid_request',
    );
    for (const url of [
      'http://tools.example/mcp',
      'https://user:pass@tools.example/mcp',
      'https://tools.example/mcp?api_key=x',
    ]) {
      const res = await owner.send('POST', '/mcp-servers', { name: 'elsewhere', url });
      assertError(t, res, 400, 'invalid_request');
      t.like(res.body.error.errors[0], { field: 'url' });
    }
    assertError(
      t,
      await owner.send('POST', '/mcp-servers', { name: 'files', url: upstream.url }),
      400,
      'invalid_request',
    );
    expectStatus(await owner.send('DELETE', '/mcp-servers/files'), 200, 'remove');
    const client = await connect(bot.key);
    t.deepEqual(
      (await client.listTools()).tools.map((x) => x.name),
      ['authorize_action', 'get_action', 'settle_action'],
    );
    await client.close();
    t.true((await owner.ledger()).some((r) => r.kind === 'mcp.server_removed' && r.subject === 'files'));
  },
);
