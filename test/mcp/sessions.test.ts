import test from 'ava';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  McpError,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { makeBot, SERVER_ENV, type Bot } from '../approvals/support.js';
import { startConformanceUpstream, type ConformanceUpstream } from '../helpers/conformance-upstream.js';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { assertError, bearer, call, mcpHeaders } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * MCP sessions at /mcp: initialize opens one, bound to the credential that opened it; the proxy
 * gives each session its own upstream session, through which resources, prompts, completions,
 * subscriptions and the upstream's requests to the client (sampling) travel; a stopped agent's
 * requests reach no upstream.
 */
let server: ServedInProcess;
let upstream: ConformanceUpstream;
let owner: Person;
let bot: Bot;
let other: Bot;

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
const sessionHeaders = (key: string, session?: string) => ({
  ...mcpHeaders(key, '2025-11-25'),
  ...(session ? { 'mcp-session-id': session } : {}),
});
const TOOLS_LIST = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} };

async function open(key: string, capabilities: Record<string, unknown> = {}): Promise<Client> {
  const client = new Client({ name: 'session-test', version: '1.0.0' }, { capabilities });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: bearer(key) } }),
  );
  return client;
}

test.before(async () => {
  upstream = await startConformanceUpstream({ watchIntervalMs: 100 });
  server = await serveInProcess({ env: { ...SERVER_ENV, SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1' } });
  owner = await ownerConsole(server);
  expectStatus(await owner.send('POST', '/mcp-servers', { name: 'conf', url: upstream.url }), 201, 'upstream');
  bot = await makeBot(owner, 'session-bot', [{ actions: ['mcp.conf.*'], domains: ['*'] }]);
  other = await makeBot(owner, 'other-bot', [{ actions: ['mcp.conf.*'], domains: ['*'] }]);
});

test.after.always(async () => {
  await stopAndClean(server);
  await upstream?.close();
});

test.serial('initialize opens a session only its own credential can use; DELETE ends it', async (t) => {
  const init = await call(server.url, 'POST', '/mcp', { headers: sessionHeaders(bot.key), json: INIT });
  t.is(init.status, 200);
  const session = String(init.headers['mcp-session-id']);
  t.regex(session, /^[\x21-\x7e]{43}$/, 'a visible-ASCII id of 32 random bytes');

  const own = await call(server.url, 'POST', '/mcp', { headers: sessionHeaders(bot.key, session), json: TOOLS_LIST });
  t.is(own.status, 200);
  t.regex(own.text, /authorize_action/);

  // Another agent's key, and another key of the same agent, are told the session does not exist.
  assertError(
    t,
    await call(server.url, 'POST', '/mcp', { headers: sessionHeaders(other.key, session), json: TOOLS_LIST }),
    404,
    'not_found',
  );
  const second = expectStatus(await owner.send('POST', `/agents/${bot.agentId}/keys`, {}), 201, 'second key');
  assertError(
    t,
    await call(server.url, 'POST', '/mcp', { headers: sessionHeaders(second.body.key, session), json: TOOLS_LIST }),
    404,
    'not_found',
  );

  t.is((await call(server.url, 'DELETE', '/mcp', { headers: sessionHeaders(bot.key, session) })).status, 200);
  const after = await call(server.url, 'POST', '/mcp', { headers: sessionHeaders(bot.key, session), json: TOOLS_LIST });
  assertError(t, after, 404, 'not_found');
  t.regex(after.body.error.fix, /initialize again/);
});

test.serial('GET and DELETE need a session: 405 with allow: POST', async (t) => {
  for (const method of ['GET', 'DELETE'] as const) {
    const res = await call(server.url, method, '/mcp', { headers: sessionHeaders(bot.key) });
    assertError(t, res, 405, 'method_not_allowed');
    t.is(res.headers.allow, 'POST');
  }
});

test.serial('a revoked key cannot go on using the session it opened', async (t) => {
  const minted = expectStatus(await owner.send('POST', `/agents/${bot.agentId}/keys`, {}), 201, 'key');
  const init = await call(server.url, 'POST', '/mcp', { headers: sessionHeaders(minted.body.key), json: INIT });
  const session = String(init.headers['mcp-session-id']);
  expectStatus(await owner.send('DELETE', `/keys/${minted.body.id}`), 200, 'revoke');
  assertError(
    t,
    await call(server.url, 'POST', '/mcp', { headers: sessionHeaders(minted.body.key, session), json: TOOLS_LIST }),
    401,
    'invalid_api_key',
  );
});

test.serial('resources, templates, prompts and completions of the upstream, through the session', async (t) => {
  const client = await open(bot.key);
  const { resources } = await client.listResources();
  t.true(resources.some((r) => r.uri === 'test://static-text'));
  const read = await client.readResource({ uri: 'test://static-text' });
  t.like(read.contents[0], { uri: 'test://static-text', mimeType: 'text/plain' });
  const { resourceTemplates } = await client.listResourceTemplates();
  t.true(resourceTemplates.some((r) => r.uriTemplate === 'test://template/{id}/data'));

  const { prompts } = await client.listPrompts();
  t.true(
    prompts.some((p) => p.name === 'conf__test_simple_prompt'),
    'prompts are named as tools are: <server>__<prompt>',
  );
  const prompt = await client.getPrompt({
    name: 'conf__test_prompt_with_arguments',
    arguments: { arg1: 'a', arg2: 'b' },
  });
  t.true(prompt.messages.length > 0);
  const done = await client.complete({
    ref: { type: 'ref/prompt', name: 'conf__test_prompt_with_arguments' },
    argument: { name: 'arg1', value: 'par' },
  });
  t.deepEqual(done.completion.values, ['paris', 'park', 'party']);

  // The upstream's own errors pass through as it sent them.
  const missing = await t.throwsAsync(client.readResource({ uri: 'test://no-such-resource' }));
  t.true(missing instanceof McpError);
  t.is((missing as McpError).code, -32602);
  await client.close();
});

test.serial("a subscription is the session's: the upstream's updates reach the client's stream", async (t) => {
  const client = await open(bot.key);
  const updated = new Promise<string>((resolve) =>
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params.uri)),
  );
  await client.subscribeResource({ uri: 'test://watched-resource' });
  t.is(await updated, 'test://watched-resource');
  await client.unsubscribeResource({ uri: 'test://watched-resource' });
  await client.close();
});

test.serial("the upstream's sampling request during a tool call is answered by the client, on that call", async (t) => {
  const client = await open(bot.key, { sampling: {} });
  const asked: string[] = [];
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    const content = req.params.messages[0]!.content as { text: string };
    asked.push(content.text);
    return { role: 'assistant', content: { type: 'text', text: 'forty-two' }, model: 'client-model' };
  });
  const result = await client.callTool({ name: 'conf__test_sampling', arguments: { prompt: 'the answer?' } });
  t.deepEqual(asked, ['the answer?']);
  t.deepEqual(result.content, [{ type: 'text', text: 'LLM response: forty-two' }]);
  await client.close();
});

test.serial(
  "a stopped agent's session reaches no upstream: lists only the gate's tools, and reads are refused",
  async (t) => {
    const client = await open(bot.key);
    expectStatus(await owner.send('POST', `/agents/${bot.agentId}/stop`, { reason: 'session test' }), 200, 'stop');
    try {
      const before = upstream.methods.length;
      const { tools } = await client.listTools();
      t.deepEqual(
        tools.map((x) => x.name),
        ['authorize_action', 'get_action', 'settle_action'],
      );
      for (const attempt of [
        client.readResource({ uri: 'test://static-text' }),
        client.listPrompts(),
        client.callTool({ name: 'conf__test_simple_text', arguments: {} }),
      ]) {
        const err = await t.throwsAsync(attempt);
        t.is((err as McpError).code, -32001);
        t.like((err as McpError).data, { type: 'agent_stopped', agentId: bot.agentId });
      }
      t.deepEqual(upstream.methods.slice(before), [], 'nothing was sent upstream');
    } finally {
      expectStatus(await owner.send('POST', `/agents/${bot.agentId}/restart`), 200, 'restart');
      await client.close();
    }
  },
);
