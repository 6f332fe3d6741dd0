import test from 'ava';
import {
  Client as ModernClient,
  SdkError,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { request } from 'undici';
import { makeBot, pay, reviewRule, SERVER_ENV, type Bot } from '../approvals/support.js';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { mcpHeaders } from '../helpers/http.js';
import { startMcpUpstream, type McpUpstream } from '../helpers/mcp-upstream.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * Both protocol eras at the one /mcp endpoint: an `@modelcontextprotocol/client` 2.4.0 pinned to
 * 2026-07-28 (server/discover, the per-request envelope, no session) and the v1 client of
 * `@modelcontextprotocol/sdk` on 2025-11-25 (initialize and its session) reach the same gate's
 * tools and the same upstream behind the proxy, every proxied call gated and recorded. The
 * transport's refusals carry the request's id and the codes the 2026-07-28 revision names.
 */
const REVISION = '2026-07-28';
let server: ServedInProcess;
let upstream: McpUpstream;
let owner: Person;
let bot: Bot;

test.before(async () => {
  upstream = await startMcpUpstream();
  server = await serveInProcess({ env: { ...SERVER_ENV, SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1' } });
  owner = await ownerConsole(server);
  expectStatus(await owner.send('POST', '/mcp-servers', { name: 'tools', url: upstream.url }), 201, 'upstream');
  bot = await makeBot(owner, 'proto-bot', [
    reviewRule(),
    { actions: ['mcp.tools.echo', 'mcp.more.echo'], domains: ['*'] },
  ]);
});

test.after.always(async () => {
  await stopAndClean(server);
  await upstream?.close();
});

const auth = () => ({ authorization: `Bearer ${bot.key}` });

async function modernClient(options: ConstructorParameters<typeof ModernClient>[1] = {}): Promise<ModernClient> {
  const client = new ModernClient(
    { name: 'svc-test-2026', version: '1.0.0' },
    { ...options, versionNegotiation: { mode: { pin: REVISION } } },
  );
  await client.connect(new ModernTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: auth() } }));
  return client;
}

const structured = (r: unknown) => (r as { structuredContent: Record<string, unknown> }).structuredContent;
const firstText = (r: unknown) => (r as { content: Array<{ text: string }> }).content[0]!.text;

test.serial(
  'a client pinned to 2026-07-28 connects, lists and calls the gate tools and a proxied upstream tool',
  async (t) => {
    const client = await modernClient();
    t.is(client.getProtocolEra(), 'modern');
    t.is(client.getNegotiatedProtocolVersion(), REVISION);
    t.true(client.getDiscoverResult()?.supportedVersions.includes(REVISION));

    const names = (await client.listTools()).tools.map((x) => x.name);
    t.true(
      ['authorize_action', 'get_action', 'settle_action', 'tools__echo'].every((n) => names.includes(n)),
      names.join(),
    );

    const allowed = structured(await client.callTool({ name: 'authorize_action', arguments: pay(1200, 'modern') }));
    t.like(allowed, { object: 'action', decision: 'allow', status: 'allowed', agentId: bot.agentId });
    const read = structured(await client.callTool({ name: 'get_action', arguments: { id: allowed.id } }));
    t.is(read.id, allowed.id);

    const before = upstream.calls.length;
    const echoed = await client.callTool({ name: 'tools__echo', arguments: { text: 'from 2026' } });
    t.falsy(echoed.isError);
    t.regex(firstText(echoed), /from 2026/);
    t.deepEqual(upstream.calls.slice(before), [{ name: 'echo', args: { text: 'from 2026' } }]);

    // A tool outside the mandate is gated before the upstream sees it.
    const refused = await client.callTool({ name: 'tools__add', arguments: { a: 1, b: 2 } });
    t.true(refused.isError);
    t.regex(firstText(refused), /Denied by the gate/);
    t.is(upstream.calls.length, before + 1);

    const records = await owner.ledger();
    t.true(
      records.some(
        (r) => r.actor === `agent:${bot.agentId}` && r.data.type === 'mcp.tools.echo' && r.data.decision === 'allow',
      ),
      'the proxied call is an action at the gate, in the ledger',
    );
    await client.close();
  },
);

test.serial('an authorize_action that needs a person answers as input_required the client fulfils', async (t) => {
  // The client can show a URL: the gate sends the person to the approvals; once one decides, the retry answers.
  const seen: Array<{ message: string; url: string }> = [];
  const client = await modernClient({ capabilities: { elicitation: { url: {} } } });
  client.setRequestHandler('elicitation/create', async (req) => {
    const params = req.params as { message: string; url: string };
    seen.push({ message: params.message, url: params.url });
    const approvalId = /approval (apr_\w+)/.exec(params.message)?.[1];
    expectStatus(await owner.send('POST', `/approvals/${approvalId}/approve`, {}), 200, 'approve');
    return { action: 'accept' };
  });
  const answer = structured(
    await client.callTool({ name: 'authorize_action', arguments: pay(3000, 'needs a person') }),
  );
  t.is(seen.length, 1);
  t.is(seen[0]!.url, `${server.url}/console/approvals`);
  t.like(answer, { object: 'action', decision: 'allow', agentId: bot.agentId });
  t.regex(String(answer.receipt), /^eyJ/);
  await client.close();
});

test.serial('a 2026-07-28 client that cannot show a URL gets the pending action, as a 2025 one does', async (t) => {
  const client = await modernClient();
  const pending = structured(await client.callTool({ name: 'authorize_action', arguments: pay(3500, 'no url') }));
  t.like(pending, { decision: 'review', status: 'pending_approval' });
  t.regex(String(pending.approvalId), /^apr_/);
  await client.close();
});

test.serial('a 2026-07-28 listener hears that the tools changed when an upstream is added', async (t) => {
  const client = await modernClient();
  const changed = new Promise<void>((resolve) => {
    client.setNotificationHandler('notifications/tools/list_changed', () => resolve());
  });
  const subscription = await client.listen({ toolsListChanged: true });
  t.true(subscription.honoredFilter.toolsListChanged);
  const more = await startMcpUpstream();
  try {
    expectStatus(await owner.send('POST', '/mcp-servers', { name: 'more', url: more.url }), 201, 'second upstream');
    await changed;
    const names = (await client.listTools()).tools.map((x) => x.name);
    t.true(names.includes('more__echo'), names.join());
  } finally {
    await subscription.close();
    await client.close();
    expectStatus(await owner.send('DELETE', '/mcp-servers/more'), 200, 'remove the second upstream');
    await more.close();
  }
});

test.serial('a 2026-07-28 listener hears that the tools changed when svc apply adds an upstream', async (t) => {
  const token = expectStatus(
    await owner.send('POST', '/service-tokens', { name: 'apply', scopes: ['setup:write'], expiresInDays: 1 }),
    201,
    'token',
  ).body.token as string;
  const client = await modernClient();
  const changed = new Promise<void>((resolve) => {
    client.setNotificationHandler('notifications/tools/list_changed', () => resolve());
  });
  const subscription = await client.listen({ toolsListChanged: true });
  const more = await startMcpUpstream();
  try {
    const document = { version: 1, mcpServers: [{ name: 'more', url: more.url }] };
    const applied = await request(`${server.url}/v1/admin/setup`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ document }),
    });
    t.is(applied.statusCode, 200, await applied.body.text());
    await changed;
    const names = (await client.listTools()).tools.map((x) => x.name);
    t.true(names.includes('more__echo'), names.join());
  } finally {
    await subscription.close();
    await client.close();
    expectStatus(await owner.send('DELETE', '/mcp-servers/more'), 200, 'remove the second upstream');
    await more.close();
  }
});

test.serial('the v1 SDK client on 2025-11-25 keeps working on the same endpoint, with its session', async (t) => {
  const client = new LegacyClient({ name: 'svc-test-2025', version: '1.0.0' });
  const transport = new LegacyTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: auth() } });
  await client.connect(transport);
  t.is(transport.protocolVersion, '2025-11-25');
  t.truthy(transport.sessionId, 'a 2025 client gets a session');
  const allowed = structured(await client.callTool({ name: 'authorize_action', arguments: pay(900, 'legacy') }));
  t.like(allowed, { decision: 'allow' });
  const echoed = await client.callTool({ name: 'tools__echo', arguments: { text: 'from 2025' } });
  t.regex(firstText(echoed), /from 2025/);
  await client.close();
});

test.serial(
  'a client pinned to 2026-07-28 is refused by name where it cannot connect, never silently downgraded',
  async (t) => {
    const client = new ModernClient(
      { name: 'svc-test-2026', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: REVISION } } },
    );
    // No credential: the probe meets the 401 challenge, an authorization failure and not an era verdict.
    const err = await t.throwsAsync(client.connect(new ModernTransport(new URL(`${server.url}/mcp`))));
    t.true(err instanceof SdkError, String(err));
    t.regex(String(err?.message), /401|auth/i);
  },
);

/** One raw JSON-RPC POST to /mcp with the bot's key. */
async function post(body: unknown, headers: Record<string, string> = {}) {
  const res = await request(`${server.url}/mcp`, {
    method: 'POST',
    headers: {
      ...mcpHeaders(bot.key),
      'content-type': 'application/json',
      ...headers,
    },
    body: JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, json: JSON.parse(text) as Record<string, unknown> & { id?: unknown } };
}

const envelope = {
  'io.modelcontextprotocol/protocolVersion': REVISION,
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
const modernHeaders = (method: string) => ({ 'mcp-protocol-version': REVISION, 'mcp-method': method });

test.serial('server/discover advertises both revisions; errors carry the request id and the named codes', async (t) => {
  const discover = await post(
    { jsonrpc: '2.0', id: 7, method: 'server/discover', params: { _meta: envelope } },
    modernHeaders('server/discover'),
  );
  t.is(discover.status, 200, JSON.stringify(discover.json));
  t.is(discover.json.id, 7);
  const versions = (discover.json.result as { supportedVersions: string[] }).supportedVersions;
  t.true(versions.includes(REVISION), versions.join());

  const unknown = await post(
    { jsonrpc: '2.0', id: 8, method: 'no/such', params: { _meta: envelope } },
    modernHeaders('no/such'),
  );
  t.is(unknown.json.id, 8);
  t.is((unknown.json.error as { code: number }).code, -32601);

  const badParams = await post(
    { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { _meta: envelope, name: 42 } },
    modernHeaders('tools/call'),
  );
  t.is(badParams.json.id, 9);
  t.is((badParams.json.error as { code: number }).code, -32602);

  // The header claims 2026-07-28 but the body carries no envelope: Invalid Params.
  const noEnvelope = await post(
    { jsonrpc: '2.0', id: 10, method: 'tools/list', params: {} },
    modernHeaders('tools/list'),
  );
  t.is(noEnvelope.json.id, 10);
  t.is((noEnvelope.json.error as { code: number }).code, -32602);

  // The Mcp-Method header names another method than the body: a header mismatch.
  const mismatch = await post(
    { jsonrpc: '2.0', id: 11, method: 'tools/list', params: { _meta: envelope } },
    modernHeaders('prompts/list'),
  );
  t.is(mismatch.status, 400);
  t.is(mismatch.json.id, 11);
  t.is((mismatch.json.error as { code: number }).code, -32020);
});

test.serial(
  'authorize_action advertises the agent-commerce fields, and asking it for an AP2 receipt gets one',
  async (t) => {
    const client = await modernClient();
    const tool = (await client.listTools()).tools.find((x) => x.name === 'authorize_action');
    const properties = Object.keys((tool?.inputSchema as { properties?: object } | undefined)?.properties ?? {});
    for (const field of ['payment', 'challenge', 'ap2', 'receipts', 'acp']) t.true(properties.includes(field), field);

    const allowed = structured(
      await client.callTool({ name: 'authorize_action', arguments: { ...pay(1100, 'with AP2'), receipts: ['ap2'] } }),
    );
    t.like(allowed, { decision: 'allow' });
    t.is(typeof allowed.ap2Receipt, 'string', 'an AP2 Payment Receipt beside svc receipt');
    await client.close();
  },
);
