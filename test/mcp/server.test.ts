import test from 'ava';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { request } from 'undici';
import { expectStatus } from '../helpers/console.js';
import { createAgent, payment, type AgentFixture } from '../helpers/gate.js';
import { call, mcpHeaders, type Json } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * The MCP server at /mcp (issue 7) through the official SDK client: the gate's tools with the
 * same decisions, idempotency and ledger as the HTTP routes; refusals as tool results; the 401
 * challenge that points at the protected-resource metadata; Host and Origin checks.
 */
let server: ServedInProcess;
let agent: AgentFixture;

async function connect(key: string): Promise<Client> {
  const client = new Client({ name: 'svc-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  return client;
}

const structured = (r: unknown) => (r as { structuredContent: Record<string, Json> }).structuredContent;

test.before(async () => {
  server = await serveInProcess();
  agent = await createAgent(server);
});

test.after.always(() => stopAndClean(server));

test.serial("tools/list names the gate's three tools, with their input schemas", async (t) => {
  const client = await connect(agent.key);
  const { tools } = await client.listTools();
  t.deepEqual(
    tools.map((x) => x.name),
    ['authorize_action', 'get_action', 'settle_action'],
  );
  t.deepEqual(tools[0]!.inputSchema.required, ['type', 'summary']);
  await client.close();
});

test.serial(
  'authorize_action decides as the HTTP route does: allow with a receipt, the same action again for the same idempotency key',
  async (t) => {
    const client = await connect(agent.key);
    const first = await client.callTool({
      name: 'authorize_action',
      arguments: payment(1200, { idempotencyKey: 'mcp-1' }),
    });
    t.falsy(first.isError);
    const action = structured(first);
    t.like(action, { object: 'action', decision: 'allow', status: 'allowed', agentId: agent.agentId });
    t.regex(action.receipt, /^eyJ/);
    t.deepEqual(JSON.parse((first.content as Array<{ text: string }>)[0]!.text), action);
    const again = structured(
      await client.callTool({ name: 'authorize_action', arguments: payment(1200, { idempotencyKey: 'mcp-1' }) }),
    );
    t.is(again.id, action.id);
    const read = structured(await client.callTool({ name: 'get_action', arguments: { id: action.id } }));
    t.is(read.id, action.id);
    const settled = structured(
      await client.callTool({ name: 'settle_action', arguments: { id: action.id, status: 'completed', amount: 1200 } }),
    );
    t.is(settled.status, 'settled');
    const ledger = await call(server.url, 'GET', `/api/w/${agent.wid}/ledger?after=-1&limit=200`, {
      headers: { cookie: agent.cookie },
    });
    t.true(
      ledger.body.data.some(
        (r: { kind: string; subject: string }) => r.kind === 'action.allowed' && r.subject === action.id,
      ),
    );
    await client.close();
  },
);

test.serial(
  'a deny is a decision; a request the gate cannot judge is a tool result with isError and the fix',
  async (t) => {
    const client = await connect(agent.key);
    const denied = structured(await client.callTool({ name: 'authorize_action', arguments: payment(900_000) }));
    t.is(denied.decision, 'deny');
    t.deepEqual(denied.signals, ['over_limit']);
    const bad = await client.callTool({ name: 'authorize_action', arguments: { type: 'payment' } });
    t.true(bad.isError);
    t.regex((bad.content as Array<{ text: string }>)[0]!.text, /^invalid_request: .*summary.*\nFix: /s);
    const missing = await client.callTool({ name: 'get_action', arguments: { id: 'act_0000000000000000000000' } });
    t.true(missing.isError);
    t.like(structured(missing), { error: { type: 'not_found' } });
    const badStatus = await client.callTool({
      name: 'settle_action',
      arguments: { id: 'act_0000000000000000000000', status: 'done' },
    });
    t.like(structured(badStatus), { error: { type: 'invalid_status' } });
    await client.close();
  },
);

test.serial('an unknown tool is a JSON-RPC error in the implementation range, with type, fix and docs', async (t) => {
  const client = await connect(agent.key);
  const err = await t.throwsAsync(client.callTool({ name: 'launch_rocket', arguments: {} }));
  t.true(err instanceof McpError);
  t.is((err as McpError).code, -32001);
  t.like((err as McpError).data, { type: 'not_found' });
  t.regex(String(((err as McpError).data as { docs: string }).docs), /\/docs\/errors#not_found$/);
  await client.close();
});

test.serial("a stopped agent's action request through MCP is denied with agent_frozen", async (t) => {
  expectStatus(
    await call(server.url, 'POST', `/api/w/${agent.wid}/agents/${agent.agentId}/stop`, {
      headers: { cookie: agent.cookie, 'x-svc-csrf': '1' },
      json: { reason: 'mcp test' },
    }),
    200,
    'stop',
  );
  const client = await connect(agent.key);
  const res = structured(await client.callTool({ name: 'authorize_action', arguments: payment(100) }));
  t.like(res, { decision: 'deny', signals: ['agent_frozen'] });
  await client.close();
  expectStatus(
    await call(server.url, 'POST', `/api/w/${agent.wid}/agents/${agent.agentId}/restart`, {
      headers: { cookie: agent.cookie, 'x-svc-csrf': '1' },
    }),
    200,
    'restart',
  );
});

test('401 without a credential points at the protected-resource metadata (RFC 9728)', async (t) => {
  const res = await call(server.url, 'POST', '/mcp', { json: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
  t.is(res.status, 401);
  t.is(
    res.headers['www-authenticate'],
    `Bearer resource_metadata="${server.url}/.well-known/oauth-protected-resource/mcp", scope="svc:agent offline_access"`,
  );
  const bad = await call(server.url, 'POST', '/mcp', {
    headers: { authorization: 'Bearer ask_wrong' },
    json: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
  });
  t.is(bad.status, 401);
  t.truthy(bad.headers['www-authenticate']);
  for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
    const meta = await call(server.url, 'GET', path);
    t.is(meta.status, 200);
    t.deepEqual(meta.body.resource, `${server.url}/mcp`);
    t.deepEqual(meta.body.authorization_servers, [server.url]);
    t.deepEqual(meta.body.bearer_methods_supported, ['header']);
  }
});

test('Host and Origin must name this deployment (DNS-rebinding protection)', async (t) => {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  const headers = { ...mcpHeaders(agent.key), 'content-type': 'application/json' };
  const rebound = await request(`${server.url}/mcp`, {
    method: 'POST',
    body,
    headers: { ...headers, host: 'evil.example:80' },
  });
  t.is(rebound.statusCode, 403);
  t.is(((await rebound.body.json()) as { error: { type: string } }).error.type, 'forbidden');
  const page = await request(`${server.url}/mcp`, {
    method: 'POST',
    body,
    headers: { ...headers, origin: 'https://evil.example' },
  });
  t.is(page.statusCode, 403);
  await page.body.dump();
});
