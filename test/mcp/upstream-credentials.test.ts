import test from 'ava';
import { addPerson, makeBot, SERVER_ENV, type Bot } from '../approvals/support.js';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { assertError, mcpPost } from '../helpers/http.js';
import { startMcpUpstream, type McpUpstream } from '../helpers/mcp-upstream.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { manualClock } from '../helpers/clock.js';
import { consent } from '../oauth/support.js';
import { secretHash } from '../../src/lib/secrets.js';
import { metrics } from '../../src/lib/metrics.js';

/**
 * Issue 34: each agent's own upstream credentials. The upstream of the OAuth tests is a second
 * svc: its /mcp is an MCP server protected by its own authorization server (RFC 9728 metadata,
 * dynamic registration, PKCE), so the gateway svc is that server's OAuth client, and what the
 * upstream saw is read from its own answers (the agent an action was made for). The static
 * secrets' upstream is the SDK fixture, which keeps the Authorization header of every request it
 * receives.
 */
const clock = manualClock();
let upstreamSvc: ServedInProcess;
let gateway: ServedInProcess;
let upOwner: Person;
let gwOwner: Person;
let alice: Bot;
let bob: Bot;
let carol: Bot;
let upAlice: Bot;
let upWorkspace: Bot;
let fixture: McpUpstream;
let addedProblem: Record<string, unknown> | null;

test.before(async () => {
  upstreamSvc = await serveInProcess({ clock, env: SERVER_ENV });
  gateway = await serveInProcess({ clock, env: { ...SERVER_ENV, SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1' } });
  upOwner = await ownerConsole(upstreamSvc);
  gwOwner = await ownerConsole(gateway);
  upAlice = await makeBot(upOwner, 'upstream-alice', [{ actions: ['email'], domains: ['*'] }]);
  upWorkspace = await makeBot(upOwner, 'upstream-shared', [{ actions: ['email'], domains: ['*'] }]);
  const rules = [{ actions: ['mcp.*'], domains: ['*'] }];
  alice = await makeBot(gwOwner, 'alice-bot', rules);
  bob = await makeBot(gwOwner, 'bob-bot', rules);
  carol = await makeBot(gwOwner, 'carol-bot', rules);
  // Added before anyone is connected: the upstream answers 401, so its tools wait for approval.
  const added = expectStatus(
    await gwOwner.send('POST', '/mcp-servers', { name: 'up', url: `${upstreamSvc.url}/mcp` }),
    201,
    'add up',
  );
  addedProblem = added.body.problem as Record<string, unknown> | null;
  fixture = await startMcpUpstream({ secrets: ['ws-secret', 'alice-secret'] });
  expectStatus(
    await gwOwner.send('POST', '/mcp-servers', { name: 'st', url: fixture.url, secret: 'ws-secret' }),
    201,
    'add st',
  );
});

test.after.always(async () => {
  await stopAndClean(gateway);
  await stopAndClean(upstreamSvc);
  await fixture?.close();
});

/** A 2025-11-25 tools/call through the gateway, without a session: its result or its error. */
async function callTool(key: string, name: string, args: Record<string, unknown> = {}) {
  const reply = await mcpPost(
    gateway.url,
    key,
    { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } },
    { revision: '2025-11-25' },
  );
  return reply.body as {
    result?: { isError?: boolean; content: Array<{ text: string }>; structuredContent?: Record<string, unknown> };
    error?: { code: number; message: string; data?: Record<string, unknown> };
  };
}

/** Connects `forWhom` through the console, the upstream's owner consenting for `upstreamAgent`; returns the console address the person lands on. */
async function connect(forWhom: { agentId: string } | { workspace: true }, upstreamAgent: string): Promise<string> {
  const started = expectStatus(await gwOwner.send('POST', '/mcp-servers/up/connect', { for: forWhom }), 200, 'connect');
  const url = new URL(started.body.authorizationUrl as string);
  const { location } = await consent(upstreamSvc, url, upOwner.cookie, 'allow', upstreamAgent);
  const back = await fetch(location, { headers: { cookie: gwOwner.cookie }, redirect: 'manual' });
  if (back.status !== 302) throw new Error(`callback: ${back.status} ${await back.text()}`);
  return back.headers.get('location')!;
}

/** Approves every tool of `up` that waits for approval (they were first listed by a connected agent). */
async function approveAll(): Promise<void> {
  const tools = expectStatus(await gwOwner.get('/mcp-servers/up/tools'), 200, 'tools').body.data as Array<{
    tool: string;
    changed: { hash: string } | null;
  }>;
  for (const x of tools)
    if (x.changed)
      expectStatus(
        await gwOwner.send('POST', `/mcp-servers/up/tools/${x.tool}/approve`, { hash: x.changed.hash }),
        200,
        'approve',
      );
}

const ask = { type: 'email', summary: 'Send the weekly report' };

test.serial(
  'an agent connected by OAuth reaches the upstream as its own connection; one not connected is refused naming the missing connection',
  async (t) => {
    // Added before anyone was connected: the answer said why its tools could not be listed.
    t.like(addedProblem, { cause: 'http_status', status: 401 });
    t.regex(
      String(addedProblem?.message),
      /the workspace has no connection to it\. Connect the workspace in the console/,
    );
    const landed = await connect({ agentId: alice.agentId }, upAlice.agentId);
    t.is(landed, `/console/mcp?w=${gwOwner.wid}#connected=${encodeURIComponent(`up/agent:${alice.agentId}`)}`);
    // Alice lists the upstream's tools with her token: they are seen, and wait for approval.
    await mcpPost(gateway.url, alice.key, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { revision: '2025-11-25' });
    await approveAll();

    const a = await callTool(alice.key, 'up__authorize_action', ask);
    t.is(a.error, undefined, JSON.stringify(a.error));
    const action = a.result!.structuredContent!;
    t.is(action.agentId, upAlice.agentId, "the upstream saw the connection made for alice's agent");

    const b = await callTool(bob.key, 'up__authorize_action', ask);
    t.is(b.result, undefined);
    t.is(b.error!.data?.type, 'upstream_not_connected');
    t.true(b.error!.message.includes(`agent ${bob.agentId} has no connection`), b.error!.message);
    t.true(b.error!.message.includes('Connect the agent in the console'), b.error!.message);

    const listed = expectStatus(await gwOwner.get('/mcp-servers/up/credentials'), 200, 'credentials').body
      .data as Array<Record<string, unknown>>;
    t.is(listed.length, 1);
    t.deepEqual(listed[0]!.holder, { agentId: alice.agentId });
    t.is(listed[0]!.kind, 'oauth');
    t.is(listed[0]!.setBy, `user:${gwOwner.id}`);
    t.is(typeof listed[0]!.expiresAt, 'string');
    const ledger = await gwOwner.ledger();
    const connected = ledger.find((r) => r.kind === 'mcp.connected');
    t.like(connected?.data, { server: 'up', agentId: alice.agentId });
  },
);

test.serial("the workspace's connection serves agents without their own; an agent's own comes first", async (t) => {
  await connect({ workspace: true }, upWorkspace.agentId);
  const c = await callTool(carol.key, 'up__authorize_action', ask);
  t.is(c.result!.structuredContent!.agentId, upWorkspace.agentId, "carol, not connected, goes as the workspace's");
  const a = await callTool(alice.key, 'up__authorize_action', ask);
  t.is(a.result!.structuredContent!.agentId, upAlice.agentId, 'alice keeps her own');
  expectStatus(
    await gwOwner.send('POST', '/mcp-servers/up/disconnect', { for: { workspace: true } }),
    200,
    'disconnect',
  );
  const again = await callTool(carol.key, 'up__authorize_action', ask);
  t.is(again.error?.data?.type, 'upstream_not_connected');
  t.true((await gwOwner.ledger()).some((r) => r.kind === 'mcp.disconnected' && r.data.workspace === true));
});

test.serial('an expired access token is renewed before use; a refused renewal says to connect again', async (t) => {
  const before = (await gwOwner.get('/mcp-servers/up/credentials')).body.data as Array<{ expiresAt: string }>;
  clock.advance(3_600_000 + 60_000);
  // Four requests that find the token expired at once (as a session's concurrent calls do) share
  // one renewal: one refresh grant upstream (its authorization server runs in this process, so
  // its grants are counted here).
  const refreshes = async () =>
    (await metrics.oauthGrants.get()).values
      .filter((v) => v.labels.grant_type === 'refresh_token' && v.labels.outcome === 'issued')
      .reduce((n, v) => n + v.value, 0);
  const grantsBefore = await refreshes();
  const proxy = gateway.app.services.mcpProxy;
  const up = await proxy.server(gwOwner.wid, 'up');
  const sent = await Promise.all([1, 2, 3, 4].map(() => proxy.credentials.provider(up, alice.agentId).token()));
  t.is(new Set(sent).size, 1, 'one token for all four');
  t.is(await refreshes(), grantsBefore + 1, 'renewed once');
  const a = await callTool(alice.key, 'up__authorize_action', ask);
  t.is(a.error, undefined, JSON.stringify(a.error));
  t.is(a.result!.structuredContent!.agentId, upAlice.agentId);
  const after = (await gwOwner.get('/mcp-servers/up/credentials')).body.data as Array<{
    expiresAt: string;
    refreshedAt: string | null;
  }>;
  t.truthy(after[0]!.refreshedAt, 'renewed');
  t.true(Date.parse(after[0]!.expiresAt) > Date.parse(before[0]!.expiresAt));

  // The upstream's owner ends the connection: the next renewal is refused.
  const connections = expectStatus(await upOwner.get('/connections'), 200, 'connections').body.data as Array<{
    id: string;
  }>;
  for (const x of connections) expectStatus(await upOwner.send('DELETE', `/connections/${x.id}`), 200, 'end');
  clock.advance(3_600_000 + 60_000);
  const refused = await callTool(alice.key, 'up__authorize_action', ask);
  t.is(refused.error?.data?.type, 'upstream_reconnect_needed');
  t.true(refused.error!.message.includes('connect again'), refused.error!.message);

  // Connecting again mends it.
  await connect({ agentId: alice.agentId }, upAlice.agentId);
  const mended = await callTool(alice.key, 'up__authorize_action', ask);
  t.is(mended.result!.structuredContent!.agentId, upAlice.agentId);
});

test.serial(
  "an agent's own static secret overrides the workspace's, and no caller's credential ever goes upstream",
  async (t) => {
    expectStatus(
      await gwOwner.send('PUT', `/mcp-servers/st/credentials/agents/${alice.agentId}`, { secret: 'alice-secret' }),
      200,
      'set',
    );
    /** The Authorization headers the upstream received during `run`. */
    const sent = async (run: () => Promise<unknown>) => {
      const from = fixture.authorizations.length;
      await run();
      return fixture.authorizations.slice(from);
    };
    const only = (headers: Array<string | undefined>, expected: string) =>
      headers.length > 0 && headers.every((h) => h === expected);
    const first = fixture.authorizations.length;
    t.true(only(await sent(() => callTool(alice.key, 'st__echo', { text: 'hi' })), 'Bearer alice-secret'));
    t.true(only(await sent(() => callTool(bob.key, 'st__echo', { text: 'hey' })), 'Bearer ws-secret'));

    expectStatus(await gwOwner.send('DELETE', `/mcp-servers/st/credentials/agents/${alice.agentId}`), 200, 'remove');
    t.true(only(await sent(() => callTool(alice.key, 'st__echo', { text: 'again' })), 'Bearer ws-secret'));

    // A caller's own token (its agent key) is what it sends the gateway, never what the upstream sees.
    const everything = JSON.stringify(fixture.authorizations.slice(first));
    t.false(everything.includes(alice.key) || everything.includes(bob.key));

    const records = (await gwOwner.ledger()).filter((r) => r.kind.startsWith('mcp.credential_'));
    t.deepEqual(
      records.map((r) => [r.kind, r.data.agentId]),
      [
        ['mcp.credential_set', alice.agentId],
        ['mcp.credential_removed', alice.agentId],
      ],
    );
    t.false(JSON.stringify(records).includes('alice-secret'));
  },
);

test.serial('a secret for an agent that is not in the workspace is refused', async (t) => {
  assertError(
    t,
    await gwOwner.send('PUT', '/mcp-servers/st/credentials/agents/agt_nobody', { secret: 'x' }),
    404,
    'not_found',
  );
});

test.serial('the callback answers only the person who started the connection', async (t) => {
  const started = expectStatus(
    await gwOwner.send('POST', '/mcp-servers/up/connect', { for: { agentId: bob.agentId } }),
    200,
    'connect',
  );
  const url = new URL(started.body.authorizationUrl as string);
  // The upstream sends the person's browser back to the gateway's callback.
  t.is(url.searchParams.get('redirect_uri'), `${gateway.url}/api/mcp-oauth/callback`);
  const { location } = await consent(upstreamSvc, url, upOwner.cookie, 'allow', upAlice.agentId);
  t.is(new URL(location).pathname, '/api/mcp-oauth/callback');
  const admin = await addPerson(gateway, gwOwner.wid, 'admin@gateway.example', 'admin');
  for (const [cookie, address] of [
    [admin.cookie, location],
    [gwOwner.cookie, location.replace(/state=[^&]+/, 'state=forged')],
  ] as const) {
    const refused = await fetch(address, { headers: { cookie }, redirect: 'manual' });
    t.is(refused.status, 400);
    t.true((await refused.text()).includes('start it again from the console'));
  }
  const b = await callTool(bob.key, 'up__authorize_action', ask);
  t.is(b.error?.data?.type, 'upstream_not_connected');
  // The person who started it finishes it.
  const back = await fetch(location, { headers: { cookie: gwOwner.cookie }, redirect: 'manual' });
  t.is(back.status, 302);
  t.is((await callTool(bob.key, 'up__authorize_action', ask)).result!.structuredContent!.agentId, upAlice.agentId);
});

test.serial('tokens and secrets are stored sealed: no stored credential is a live token or a secret', async (t) => {
  expectStatus(
    await gwOwner.send('PUT', `/mcp-servers/st/credentials/agents/${bob.agentId}`, { secret: 'alice-secret' }),
    200,
    'set',
  );
  const raw = await gateway.app.store.tables.mcpCredentials.scan([]);
  t.true(raw.some((e) => e.value.kind === 'oauth') && raw.some((e) => e.value.kind === 'secret'));
  const text = JSON.stringify(raw);
  t.false(text.includes('aat_') || text.includes('art_'), 'no token of the upstream in clear');
  t.false(text.includes('alice-secret'));
  const strings: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') strings.push(v);
    else if (v && typeof v === 'object') for (const x of Object.values(v)) walk(x);
  };
  walk(raw);
  const tokens = upstreamSvc.app.store.tables.oauthTokens;
  for (const s of strings) t.false(await tokens.has(secretHash(s)), `stored value ${s.slice(0, 8)}… is a live token`);
});
