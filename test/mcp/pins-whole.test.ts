import test from 'ava';
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { makeBot, SERVER_ENV, type Bot } from '../approvals/support.js';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { startMcpUpstream, type McpUpstream } from '../helpers/mcp-upstream.js';
import { stopAndClean } from '../helpers/process.js';

/**
 * Whole tools pinned (issue 34 part 7): a tool's description, input schema, output schema and
 * annotations are what is approved, so flipping `readOnlyHint` or changing what a tool says it
 * returns upstream is a rug pull like a new description: withheld from tools/list, its calls
 * refused with tool_changed, until an owner approves it. A pin approved before the whole tool
 * was pinned (description and input schema only) keeps serving a tool that did not change, and
 * takes in the rest of the tool at its first listing.
 */
const ECHO_SCHEMA = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] };
const ADD_SCHEMA = {
  type: 'object',
  properties: { a: { type: 'number' }, b: { type: 'number' } },
  required: ['a', 'b'],
};
const ECHO_OUTPUT = { type: 'object', properties: { text: { type: 'string' } } };
const sha = (value: unknown) => createHash('sha256').update(canonicalize(value)!).digest('hex');

let server: ServedInProcess;
let annotated: McpUpstream;
let old: McpUpstream;
let owner: Person;
let bot: Bot;

async function connect(key: string): Promise<Client> {
  const client = new Client({ name: 'pins-whole-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  return client;
}

const names = async (client: Client) => (await client.listTools()).tools.map((x) => x.name);
type PinView = { tool: string; status: string; approved: Record<string, unknown>; changed: Record<string, unknown> };
const pinOf = async (name: string, tool: string): Promise<PinView> =>
  (expectStatus(await owner.send('GET', `/mcp-servers/${name}/tools`), 200, 'pins').body.data as PinView[]).find(
    (x) => x.tool === tool,
  )!;

test.before(async () => {
  annotated = await startMcpUpstream();
  annotated.change('add', { annotations: { readOnlyHint: true } });
  annotated.change('echo', { outputSchema: ECHO_OUTPUT });
  old = await startMcpUpstream();
  old.change('echo', { annotations: { destructiveHint: true } });
  server = await serveInProcess({ env: { ...SERVER_ENV, SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1' } });
  owner = await ownerConsole(server);
  for (const [name, upstream] of [
    ['tools', annotated],
    ['old', old],
  ] as const)
    expectStatus(
      await owner.send('POST', '/mcp-servers', { name, url: upstream.url, allowTools: ['echo', 'add'] }),
      201,
      name,
    );
  bot = await makeBot(owner, 'pins-bot', [{ actions: ['mcp.tools.*', 'mcp.old.*'], domains: ['*'] }]);
});

test.after.always(async () => {
  await stopAndClean(server);
  await annotated?.close();
  await old?.close();
});

test.serial('flipping readOnlyHint upstream withholds the tool until an owner approves it', async (t) => {
  const readOnly = sha({
    description: 'Adds two numbers.',
    inputSchema: ADD_SCHEMA,
    annotations: { readOnlyHint: true },
  });
  const writes = sha({
    description: 'Adds two numbers.',
    inputSchema: ADD_SCHEMA,
    annotations: { readOnlyHint: false },
  });
  t.like((await owner.ledger()).find((r) => r.kind === 'mcp.server_added' && r.subject === 'tools')?.data.pinned, {
    add: readOnly,
    echo: sha({ description: 'Says the text back.', inputSchema: ECHO_SCHEMA, outputSchema: ECHO_OUTPUT }),
  });
  const client = await connect(bot.key);
  t.true((await names(client)).includes('tools__add'));

  annotated.change('add', { annotations: { readOnlyHint: false } });
  t.false((await names(client)).includes('tools__add'), 'withheld from tools/list');
  const before = annotated.calls.length;
  const err = await t.throwsAsync(client.callTool({ name: 'tools__add', arguments: { a: 1, b: 2 } }));
  t.true(err instanceof McpError);
  t.like((err as McpError).data, { type: 'tool_changed', tool: 'add', oldHash: readOnly, newHash: writes });
  t.regex((err as McpError).message, /annotations/);
  t.is(annotated.calls.length, before, 'never sent');
  t.like((await owner.ledger()).findLast((r) => r.kind === 'mcp.tool_changed')?.data, {
    tool: 'add',
    oldHash: readOnly,
    newHash: writes,
  });
  t.like(await pinOf('tools', 'add'), {
    status: 'changed',
    approved: { annotations: { readOnlyHint: true } },
    changed: { annotations: { readOnlyHint: false } },
  });

  expectStatus(await owner.send('POST', '/mcp-servers/tools/tools/add/approve', { hash: writes }), 200, 'approve');
  t.true((await names(client)).includes('tools__add'), 'served again once approved');
  await client.close();
});

test.serial('a changed output schema withholds the tool until approved', async (t) => {
  const client = await connect(bot.key);
  t.true((await names(client)).includes('tools__echo'));
  const output = { type: 'object', properties: { text: { type: 'string' }, ssh_key: { type: 'string' } } };
  annotated.change('echo', { outputSchema: output });
  t.false((await names(client)).includes('tools__echo'));
  const pin = await pinOf('tools', 'echo');
  t.like(pin, { status: 'changed', approved: { outputSchema: ECHO_OUTPUT }, changed: { outputSchema: output } });
  expectStatus(
    await owner.send('POST', '/mcp-servers/tools/tools/echo/approve', { hash: pin.changed.hash }),
    200,
    'approve',
  );
  t.true((await names(client)).includes('tools__echo'));
  await client.close();
});

test.serial(
  'a pin approved before the whole tool was pinned keeps its tool served, then holds all of it',
  async (t) => {
    // The pin as an earlier version stored it: the description and input schema, hashed alone.
    const legacy = sha({ description: 'Says the text back.', inputSchema: ECHO_SCHEMA });
    const store = server.app.store;
    await store.write(async () => {
      const pin = (await store.tables.mcpToolPins.get([owner.wid, 'old', 'echo']))!;
      await store.tables.mcpToolPins.put([owner.wid, 'old', 'echo'], {
        ...pin,
        approved: {
          hash: legacy,
          description: 'Says the text back.',
          inputSchema: ECHO_SCHEMA,
          at: '2026-01-01T00:00:00.000Z',
          by: 'user:usr_earlier',
        },
      });
    });
    const client = await connect(bot.key);
    t.true((await names(client)).includes('old__echo'), 'not withheld after the upgrade');
    t.deepEqual((await client.callTool({ name: 'old__echo', arguments: { text: 'still here' } })).content, [
      { type: 'text', text: 'still here' },
    ]);
    t.like(await pinOf('old', 'echo'), {
      status: 'approved',
      approved: {
        hash: sha({
          description: 'Says the text back.',
          inputSchema: ECHO_SCHEMA,
          annotations: { destructiveHint: true },
        }),
        annotations: { destructiveHint: true },
        outputSchema: null,
        at: '2026-01-01T00:00:00.000Z',
        by: 'user:usr_earlier',
      },
    });
    t.false(
      (await owner.ledger()).some((r) => r.kind === 'mcp.tool_changed' && r.subject === 'old'),
      'taking in the rest of the tool is no change',
    );

    old.change('echo', { annotations: { destructiveHint: false } });
    t.false((await names(client)).includes('old__echo'), 'from then on, an annotation flip is held');
    await client.close();
  },
);
