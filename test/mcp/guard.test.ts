import test from 'ava';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { makeBot, SERVER_ENV, type Bot } from '../approvals/support.js';
import { manualClock } from '../helpers/clock.js';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { authorize } from '../helpers/gate.js';
import { assertError } from '../helpers/http.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { startMcpUpstream, type McpUpstream } from '../helpers/mcp-upstream.js';
import { stopAndClean } from '../helpers/process.js';

/**
 * Limits and screening on the tools at /mcp (issue 34 part 3), end to end with the SDK's client
 * and a loopback upstream: the gate's per-agent limit is one budget for HTTP authorizations,
 * `authorize_action` and proxied calls; a tool approved with `callsPerMinute` is held to it per
 * agent; the workspace's data-loss mode redacts or refuses what a proxied call sends and what it
 * returns, each screening one `mcp.tool_screened` ledger record with counts, never a value.
 */
const LIMIT = 5;
let server: ServedInProcess;
let upstream: McpUpstream;
let owner: Person;
const clock = manualClock();

async function connect(key: string): Promise<Client> {
  const client = new Client({ name: 'guard-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  return client;
}

const bot = (name: string): Promise<Bot> =>
  makeBot(owner, name, [{ actions: ['mcp.files.*', 'email'], domains: ['*'] }]);

/** What both SDKs' clients answer a tool call with, as far as these tests read it. */
type Answer = { isError?: boolean; content?: unknown; structuredContent?: unknown };
const authorizeAction = async (client: {
  callTool(p: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
}): Promise<Answer> =>
  (await client.callTool({
    name: 'authorize_action',
    arguments: { type: 'email', summary: 'Send the weekly report' },
  })) as Answer;

/** The JSON-RPC error a call is refused with. */
async function refusal(t: import('ava').ExecutionContext, call: Promise<unknown>): Promise<McpError> {
  const err = await t.throwsAsync(call);
  t.true(err instanceof McpError, String(err));
  t.is((err as McpError).code, -32001);
  return err as McpError;
}

test.before(async () => {
  upstream = await startMcpUpstream();
  server = await serveInProcess({
    clock,
    env: { ...SERVER_ENV, SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1', SVC_GATE_RATE_PER_MINUTE: String(LIMIT) },
  });
  owner = await ownerConsole(server);
  expectStatus(
    await owner.send('POST', '/mcp-servers', { name: 'files', url: upstream.url, allowTools: ['echo', 'add'] }),
    201,
    'upstream',
  );
});

test.after.always(async () => {
  await stopAndClean(server);
  await upstream?.close();
});

// Each test starts a fresh minute.
test.beforeEach(() => clock.advance(60_000));

test.serial(
  'the per-agent gate limit is one budget for HTTP authorize, authorize_action and proxied calls',
  async (t) => {
    const agent = await bot('limited-bot');
    const client = await connect(agent.key);
    // Two over HTTP, three over MCP: the five of the minute.
    for (let i = 0; i < 2; i += 1)
      t.is((await authorize(server, agent.key, { type: 'email', summary: 'x' })).status, 200);
    for (let i = 0; i < 3; i += 1) t.not((await authorizeAction(client)).isError, true);

    const over = await authorizeAction(client);
    t.true(over.isError, 'the sixth is refused, as a gate tool refuses: a tool result with isError');
    const error = (over.structuredContent as { error: Record<string, unknown> }).error;
    t.like(error, { type: 'rate_limited', limit: LIMIT });
    t.true(typeof error.retryAfter === 'number' && error.retryAfter >= 1 && error.retryAfter <= 60);
    t.regex(
      (over.content as Array<{ text: string }>)[0]!.text,
      /^rate_limited: This agent sent more than 5 gate requests/,
    );

    const http = await authorize(server, agent.key, { type: 'email', summary: 'x' });
    assertError(t, http, 429, 'rate_limited');

    const before = upstream.calls.length;
    const err = await refusal(t, client.callTool({ name: 'files__echo', arguments: { text: 'hi' } }));
    t.like(err.data, { type: 'rate_limited', limit: LIMIT });
    t.is(upstream.calls.length, before, 'the proxied call never reached the upstream');

    // Another agent has its own budget.
    const other = await connect((await bot('other-bot')).key);
    t.not((await authorizeAction(other)).isError, true);

    clock.advance(60_000);
    t.not((await authorizeAction(client)).isError, true, 'a new minute, a new budget');
    t.deepEqual((await client.callTool({ name: 'files__echo', arguments: { text: 'hi' } })).content, [
      { type: 'text', text: 'hi' },
    ]);
    await client.close();
    await other.close();
  },
);

test.serial('a 2026-07-28 client meets the same limit, in the same shapes', async (t) => {
  const agent = await bot('modern-bot');
  const client = new ModernClient(
    { name: 'guard-test-2026', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(
    new ModernTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${agent.key}` } },
    }),
  );
  try {
    for (let i = 0; i < LIMIT; i += 1) t.not((await authorizeAction(client)).isError, true);
    const over = await authorizeAction(client);
    t.true(over.isError);
    t.like((over.structuredContent as { error: object }).error, { type: 'rate_limited', limit: LIMIT });
    const err = await t.throwsAsync(client.callTool({ name: 'files__echo', arguments: { text: 'hi' } }));
    t.is((err as { code?: number }).code, -32001);
    t.like((err as { data?: object }).data, { type: 'rate_limited', limit: LIMIT });
  } finally {
    await client.close();
  }
});

test.serial('a tool approved with callsPerMinute is held to it, per agent', async (t) => {
  const tools = expectStatus(await owner.send('GET', '/mcp-servers/files/tools'), 200, 'pins').body.data as Array<{
    tool: string;
    approved: { hash: string };
  }>;
  const hash = tools.find((x) => x.tool === 'echo')!.approved.hash;
  assertError(
    t,
    await owner.send('POST', '/mcp-servers/files/tools/echo/approve', { hash, callsPerMinute: 0 }),
    400,
    'invalid_request',
  );
  const set = expectStatus(
    await owner.send('POST', '/mcp-servers/files/tools/echo/approve', { hash, callsPerMinute: 2 }),
    200,
    'limit',
  );
  t.like(set.body, { tool: 'echo', status: 'approved', callsPerMinute: 2 });
  t.like((await owner.ledger()).findLast((r) => r.kind === 'mcp.tool_approved')?.data, {
    tool: 'echo',
    callsPerMinute: 2,
  });

  const client = await connect((await bot('echo-bot')).key);
  for (const text of ['one', 'two'])
    t.deepEqual((await client.callTool({ name: 'files__echo', arguments: { text } })).content, [
      { type: 'text', text },
    ]);
  const before = upstream.calls.length;
  const actions = (await owner.ledger()).filter((r) => r.kind.startsWith('action.')).length;
  const err = await refusal(t, client.callTool({ name: 'files__echo', arguments: { text: 'three' } }));
  t.like(err.data, { type: 'rate_limited', limit: 2 });
  t.regex(err.message, /called the tool echo more than 2 times this minute/);
  t.is(upstream.calls.length, before, 'not sent');
  t.is((await owner.ledger()).filter((r) => r.kind.startsWith('action.')).length, actions, 'no action at the gate');
  t.deepEqual((await client.callTool({ name: 'files__add', arguments: { a: 1, b: 2 } })).content, [
    { type: 'text', text: '3' },
  ]);

  const other = await connect((await bot('other-echo-bot')).key);
  t.deepEqual((await other.callTool({ name: 'files__echo', arguments: { text: 'mine' } })).content, [
    { type: 'text', text: 'mine' },
  ]);
  clock.advance(60_000);
  t.false((await client.callTool({ name: 'files__echo', arguments: { text: 'later' } })).isError === true);

  // null lifts it.
  t.like(
    expectStatus(
      await owner.send('POST', '/mcp-servers/files/tools/echo/approve', { hash, callsPerMinute: null }),
      200,
      'lift',
    ).body,
    { callsPerMinute: null },
  );
  for (let i = 0; i < 3; i += 1)
    t.deepEqual((await client.callTool({ name: 'files__echo', arguments: { text: 'free' } })).content, [
      { type: 'text', text: 'free' },
    ]);
  await client.close();
  await other.close();
});

test.serial('the data-loss mode redacts what a proxied call sends and returns, and records it', async (t) => {
  expectStatus(await owner.send('PUT', '/gateway', { dataLoss: 'redact' }), 200, 'redact');
  const client = await connect((await bot('redact-bot')).key);
  try {
    const sent = await client.callTool({ name: 'files__echo', arguments: { text: 'write to bob@example.com' } });
    t.deepEqual(upstream.calls.at(-1)?.args, { text: 'write to [REDACTED:email]' }, 'the upstream never saw it');
    t.deepEqual(sent.content, [{ type: 'text', text: 'write to [REDACTED:email]' }]);

    upstream.reply = (name) =>
      name === 'add'
        ? {
            content: [{ type: 'text', text: 'card 4111 1111 1111 1111 on file' }],
            structuredContent: { card: '4111 1111 1111 1111', sum: 3 },
          }
        : undefined;
    const got = await client.callTool({ name: 'files__add', arguments: { a: 1, b: 2 } });
    t.deepEqual(got.content, [{ type: 'text', text: 'card [REDACTED:card] on file' }]);
    t.deepEqual(got.structuredContent, { card: '[REDACTED:card]', sum: 3 });

    const records = (await owner.ledger()).filter((r) => r.kind === 'mcp.tool_screened');
    t.deepEqual(
      records.map((r) => r.data),
      [
        { server: 'files', tool: 'echo', in: 'arguments', mode: 'redact', outcome: 'redacted', findings: { email: 1 } },
        { server: 'files', tool: 'add', in: 'result', mode: 'redact', outcome: 'redacted', findings: { card: 2 } },
      ],
    );
    t.false(JSON.stringify(records).includes('bob@example.com'), 'counts, never a value');
    t.false(JSON.stringify(records).includes('4111'));
  } finally {
    upstream.reply = undefined;
    expectStatus(await owner.send('PUT', '/gateway', { dataLoss: 'off' }), 200, 'off');
    await client.close();
  }
});

test.serial(
  'the data-loss mode block refuses a call that would send sensitive data, and withholds a result holding some',
  async (t) => {
    expectStatus(await owner.send('PUT', '/gateway', { dataLoss: 'block' }), 200, 'block');
    const client = await connect((await bot('block-bot')).key);
    try {
      const before = upstream.calls.length;
      const err = await refusal(
        t,
        client.callTool({ name: 'files__echo', arguments: { text: 'key AKIAABCDEFGHIJKLMNOP' } }),
      );
      t.like(err.data, { type: 'sensitive_data_blocked', in: 'arguments', findings: { secret: 1 } });
      t.is(upstream.calls.length, before, 'the call was not sent');

      upstream.reply = () => ({ content: [{ type: 'text', text: 'call +44 20 7946 0958' }] });
      const withheld = await refusal(t, client.callTool({ name: 'files__add', arguments: { a: 1, b: 2 } }));
      t.like(withheld.data, { type: 'sensitive_data_blocked', in: 'result', findings: { phone: 1 } });
      t.is(upstream.calls.length, before + 1, 'the upstream ran it; its result is withheld');

      t.deepEqual(
        (await owner.ledger())
          .filter((r) => r.kind === 'mcp.tool_screened' && r.data.mode === 'block')
          .map((r) => r.data),
        [
          {
            server: 'files',
            tool: 'echo',
            in: 'arguments',
            mode: 'block',
            outcome: 'blocked',
            findings: { secret: 1 },
          },
          { server: 'files', tool: 'add', in: 'result', mode: 'block', outcome: 'blocked', findings: { phone: 1 } },
        ],
      );
      upstream.reply = undefined;
      t.deepEqual(
        (await client.callTool({ name: 'files__add', arguments: { a: 2, b: 2 } })).content,
        [{ type: 'text', text: '4' }],
        'nothing found: as it came',
      );
    } finally {
      upstream.reply = undefined;
      expectStatus(await owner.send('PUT', '/gateway', { dataLoss: 'off' }), 200, 'off');
      await client.close();
    }
  },
);

test.serial('the data-loss mode screens object keys and every string of a result, not only its text', async (t) => {
  expectStatus(await owner.send('PUT', '/gateway', { dataLoss: 'block' }), 200, 'block');
  const blocked = await connect((await bot('keys-block-bot')).key);
  try {
    const before = upstream.calls.length;
    const err = await refusal(
      t,
      blocked.callTool({ name: 'files__echo', arguments: { text: 'hi', extra: { '4111 1111 1111 1111': 1 } } }),
    );
    t.like(err.data, { type: 'sensitive_data_blocked', in: 'arguments', findings: { card: 1 } });
    t.is(upstream.calls.length, before, 'a key is screened as a value is: the call was not sent');

    upstream.reply = () => ({
      content: [
        { type: 'text', text: 'see the link' },
        { type: 'resource_link', uri: 'file:///x', name: 'x', description: 'card 4111 1111 1111 1111' },
      ],
    });
    const withheld = await refusal(t, blocked.callTool({ name: 'files__add', arguments: { a: 1, b: 2 } }));
    t.like(withheld.data, { type: 'sensitive_data_blocked', in: 'result', findings: { card: 1 } });
  } finally {
    upstream.reply = undefined;
    await blocked.close();
  }

  expectStatus(await owner.send('PUT', '/gateway', { dataLoss: 'redact' }), 200, 'redact');
  const client = await connect((await bot('keys-redact-bot')).key);
  try {
    await client.callTool({
      name: 'files__echo',
      arguments: { text: 'hi', extra: { 'bob@example.com': 1, 'ann@example.com': 2, '[REDACTED:email]': 3 } },
    });
    const sent = upstream.calls.at(-1)?.args as { extra: Record<string, number> };
    t.deepEqual(
      sent.extra,
      { '[REDACTED:email]#2': 1, '[REDACTED:email]#3': 2, '[REDACTED:email]': 3 },
      'each key redacted, none overwriting another',
    );
    t.false(JSON.stringify(upstream.calls.at(-1)).includes('@example.com'), 'the upstream never saw it');

    upstream.reply = () => ({
      content: [
        { type: 'text', text: 'fine' },
        {
          type: 'resource_link',
          uri: 'mailto:bob@example.com',
          name: 'bob@example.com',
          description: 'card 4111 1111 1111 1111',
        },
      ],
      structuredContent: { 'ann@example.com': { deep: [{ deeper: 'AKIAABCDEFGHIJKLMNOP' }] } },
      _meta: { owner: 'carl@example.com' },
    });
    const got = await client.callTool({ name: 'files__add', arguments: { a: 1, b: 2 } });
    const seen = JSON.stringify(got);
    for (const value of ['bob@example.com', 'ann@example.com', 'carl@example.com', '4111', 'AKIA'])
      t.false(seen.includes(value), `${value} was redacted: ${seen}`);
    t.like(got.content, [
      { type: 'text', text: 'fine' },
      { type: 'resource_link', name: '[REDACTED:email]', description: 'card [REDACTED:card]' },
    ]);
    t.deepEqual(got.structuredContent, { '[REDACTED:email]': { deep: [{ deeper: '[REDACTED:secret]' }] } });
    t.deepEqual(got._meta, { owner: '[REDACTED:email]' });
  } finally {
    upstream.reply = undefined;
    expectStatus(await owner.send('PUT', '/gateway', { dataLoss: 'off' }), 200, 'off');
    await client.close();
  }
});

test.serial(
  "an upstream's own JSON-RPC error is screened like its result, and never carries the server's secret",
  async (t) => {
    const secret = 'sk-upstream-0123456789abcdef';
    const other = await startMcpUpstream();
    expectStatus(
      await owner.send('POST', '/mcp-servers', { name: 'vault', url: other.url, secret, allowTools: ['echo', 'add'] }),
      201,
      'upstream with a secret',
    );
    expectStatus(await owner.send('PUT', '/gateway', { dataLoss: 'redact' }), 200, 'redact');
    const client = await connect(
      (await makeBot(owner, 'error-bot', [{ actions: ['mcp.vault.*'], domains: ['*'] }])).key,
    );
    try {
      // An upstream that echoes what it was sent: the Authorization header and a card it read.
      other.reply = () => {
        throw new McpError(-32010, `lookup failed (${other.authorizations.at(-1)}) for card 4111 1111 1111 1111`, {
          row: { owner: 'bob@example.com', auth: other.authorizations.at(-1) },
        });
      };
      const err = await t.throwsAsync(client.callTool({ name: 'vault__echo', arguments: { text: 'hi' } }));
      t.true(err instanceof McpError, String(err));
      const got = err as McpError;
      t.is(got.code, -32010, "the upstream's own code");
      t.regex(got.message, /lookup failed \(Bearer \[secret\]\) for card \[REDACTED:card\]/);
      t.deepEqual(got.data, { row: { owner: '[REDACTED:email]', auth: 'Bearer [secret]' } });
      t.false(JSON.stringify({ m: got.message, d: got.data }).includes('0123456789abcdef'), 'no secret');

      const records = (await owner.ledger()).filter((r) => r.kind === 'mcp.tool_screened' && r.subject === 'vault');
      t.deepEqual(
        records.map((r) => r.data),
        [
          {
            server: 'vault',
            tool: 'echo',
            in: 'result',
            mode: 'redact',
            outcome: 'redacted',
            findings: { card: 1, email: 1 },
          },
        ],
      );
    } finally {
      other.reply = undefined;
      expectStatus(await owner.send('PUT', '/gateway', { dataLoss: 'off' }), 200, 'off');
      await client.close();
      await other.close();
    }
  },
);
