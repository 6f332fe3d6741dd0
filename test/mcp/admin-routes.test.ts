import test from 'ava';
import { expectStatus, ownerConsole, otherWorkspace, type Person } from '../helpers/console.js';
import { assertError, bearer, call, type Reply } from '../helpers/http.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { startMcpUpstream, type McpUpstream } from '../helpers/mcp-upstream.js';
import { stopAndClean } from '../helpers/process.js';
import type { ServiceTokenScope } from '../../src/service-tokens/records.js';

/**
 * The machine routes of the upstream MCP servers (issue 34 part 8), for service tokens with
 * mcp:read and mcp:write: what they do is what the console's routes do (the same server, pins
 * and ledger records, named by the token), seen from the console; the connection test says why
 * an upstream cannot be used; and a token reaches only its own workspace's servers.
 */
let server: ServedInProcess;
let upstream: McpUpstream;
let owner: Person;
let reader: string;
let writer: string;

const tokenOf = async (wid: string, name: string, scopes: ServiceTokenScope[]) =>
  (await server.app.services.serviceTokens.create(wid, { name, scopes, expiresInDays: 1 })).token;

const as = (token: string, method: string, path: string, json?: unknown): Promise<Reply> =>
  call(server.url, method, path, {
    headers: bearer(token),
    ...(json === undefined ? {} : { json }),
  });

test.before(async () => {
  upstream = await startMcpUpstream({ secret: 'upstream-secret-1' });
  server = await serveInProcess({ env: { SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1', SVC_SIGNIN_RATE_PER_MINUTE: '1000' } });
  owner = await ownerConsole(server);
  reader = await tokenOf(owner.wid, 'mcp-reader', ['mcp:read']);
  writer = await tokenOf(owner.wid, 'mcp-writer', ['mcp:write', 'mcp:read']);
});

test.after.always(async () => {
  await stopAndClean(server);
  await upstream?.close();
});

test.serial('a token adds a server as the console would: its tools pinned, recorded under the token', async (t) => {
  const added = await as(writer, 'POST', '/v1/admin/mcp-servers', {
    name: 'files',
    url: upstream.url,
    secret: 'upstream-secret-1',
    allowTools: ['echo', 'add'],
  });
  t.is(added.status, 201, added.text);
  t.like(added.body, { name: 'files', url: upstream.url, hasSecret: true, allowTools: ['echo', 'add'] });
  t.deepEqual([...added.body.pinnedTools].sort(), ['add', 'echo']);
  t.false(added.text.includes('upstream-secret-1'), 'the secret is never answered');

  // The console sees the same server, and the ledger names the token.
  const listed = (await owner.get('/mcp-servers')).body.data as Array<{ name: string }>;
  t.deepEqual(
    listed.map((x) => x.name),
    ['files'],
  );
  const record = (await owner.ledger()).find((r) => r.kind === 'mcp.server_added');
  t.like(record, { actor: 'token:mcp-writer', subject: 'files', data: { url: upstream.url, secret: true } });

  const again = await as(writer, 'POST', '/v1/admin/mcp-servers', { name: 'files', url: upstream.url });
  assertError(t, again, 400, 'invalid_request');
  assertError(
    t,
    await as(writer, 'POST', '/v1/admin/mcp-servers', { name: 'x', url: 'ftp://files.example/' }),
    400,
    'invalid_request',
  );
});

test.serial('list and the connection test: reachable with its counts, else unreachable with a cause', async (t) => {
  const list = await as(reader, 'GET', '/v1/admin/mcp-servers');
  t.is(list.status, 200, list.text);
  t.like(list.body, { data: [{ name: 'files', hasSecret: true }], next: null });

  const ok = await as(reader, 'GET', '/v1/admin/mcp-servers/files');
  t.is(ok.status, 200, ok.text);
  t.like(ok.body, { name: 'files', reachable: true, problem: null, tools: { total: 2, pending: 0 } });

  upstream.down = true;
  try {
    const down = await as(reader, 'GET', '/v1/admin/mcp-servers/files');
    t.is(down.status, 200, down.text);
    t.false(down.body.reachable);
    t.is(typeof down.body.problem.cause, 'string');
    t.true(down.body.problem.message.length > 0, down.text);
  } finally {
    upstream.down = false;
  }
  assertError(t, await as(reader, 'GET', '/v1/admin/mcp-servers/nothing'), 404, 'not_found');
});

test.serial(
  'a change is listed with its hash; approving names the hash, and the approval is the token’s',
  async (t) => {
    upstream.change('echo', { description: 'Says the text back, louder.' });
    const tools = await as(reader, 'GET', '/v1/admin/mcp-servers/files/tools');
    t.is(tools.status, 200, tools.text);
    t.true(tools.body.reachable);
    const echo = (tools.body.data as Array<{ tool: string; status: string; changed: { hash: string } | null }>).find(
      (x) => x.tool === 'echo',
    )!;
    t.is(echo.status, 'changed');

    // A reader may not approve; a stale hash is refused; the one listed is approved.
    assertError(
      t,
      await as(reader, 'POST', '/v1/admin/mcp-servers/files/tools/echo/approve', { hash: echo.changed!.hash }),
      403,
      'missing_scope',
    );
    assertError(
      t,
      await as(writer, 'POST', '/v1/admin/mcp-servers/files/tools/echo/approve', { hash: 'a'.repeat(64) }),
      400,
      'invalid_request',
    );
    const approved = await as(writer, 'POST', '/v1/admin/mcp-servers/files/tools/echo/approve', {
      hash: echo.changed!.hash,
    });
    t.is(approved.status, 200, approved.text);
    t.like(approved.body, { tool: 'echo', status: 'approved', changed: null, approved: { by: 'token:mcp-writer' } });
    const record = (await owner.ledger()).find((r) => r.kind === 'mcp.tool_approved');
    t.like(record, { actor: 'token:mcp-writer', data: { tool: 'echo', newHash: echo.changed!.hash } });
    // Nothing waits any more, as the console shows.
    const seen = (await owner.get('/mcp-servers/files/tools')).body.data as Array<{ status: string }>;
    t.true(seen.every((x) => x.status === 'approved'));
  },
);

test.serial("a token of another workspace sees none of this workspace's servers", async (t) => {
  const other = await otherWorkspace(server);
  const stranger = await tokenOf(other.wid, 'stranger', ['mcp:read', 'mcp:write']);
  t.deepEqual((await as(stranger, 'GET', '/v1/admin/mcp-servers')).body.data, []);
  assertError(t, await as(stranger, 'GET', '/v1/admin/mcp-servers/files'), 404, 'not_found');
  assertError(t, await as(stranger, 'DELETE', '/v1/admin/mcp-servers/files'), 404, 'not_found');
  t.is((await owner.get('/mcp-servers')).body.data.length, 1);
});

test.serial('removing it is recorded under the token, and the server is gone', async (t) => {
  assertError(t, await as(reader, 'DELETE', '/v1/admin/mcp-servers/files'), 403, 'missing_scope');
  const removed = await as(writer, 'DELETE', '/v1/admin/mcp-servers/files');
  t.is(removed.status, 200, removed.text);
  t.like(
    (await owner.ledger()).find((r) => r.kind === 'mcp.server_removed'),
    { actor: 'token:mcp-writer', subject: 'files' },
  );
  expectStatus(await owner.get('/mcp-servers'), 200, 'list');
  t.deepEqual((await owner.get('/mcp-servers')).body.data, []);
  assertError(t, await as(reader, 'GET', '/v1/admin/mcp-servers/files'), 404, 'not_found');
});
