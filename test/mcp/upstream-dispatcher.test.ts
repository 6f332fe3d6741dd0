import test from 'ava';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LookupAddress } from 'node:dns';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { createApp, type App } from '../../src/app.js';
import { AppError } from '../../src/errors/app-error.js';
import { createHttpServer, type HttpServer } from '../../src/server.js';
import { createLogger } from '../../src/lib/log.js';
import { refusedBy, type LookupFn } from '../../src/lib/safe-target.js';
import { loadSettings } from '../../src/settings/load.js';
import { startMcpUpstream } from '../helpers/mcp-upstream.js';
import { removeDir, tempDir } from '../helpers/process.js';

/**
 * Upstream MCP servers are reached only through the vetted, pinned dispatcher of the outbound
 * webhooks: a name resolving to a link-local address (cloud metadata) is refused at connect
 * whatever the settings; a loopback upstream works with mcp.allowPrivateUpstreams and is refused
 * without it, when added (a written address) and at connect (one added while it was allowed).
 * The real app and HTTP server in this process, so that DNS can be given (names ending .test);
 * an agent calls through /mcp with the SDK's client.
 */
const NAMES: Record<string, string> = { 'metadata.test': '169.254.169.254', 'rebound.test': '127.0.0.1' };
const lookup: LookupFn = (hostname, _options, callback) => {
  const address = NAMES[hostname];
  if (!address) return callback(Object.assign(new Error(`${hostname} unknown`), { code: 'ENOTFOUND' }), '');
  callback(null, [{ address, family: 4 } satisfies LookupAddress]);
};

interface Stack {
  app: App;
  http: HttpServer;
  wid: string;
  agentKey: string;
}

async function stack(dir: string, allowPrivate: boolean, seed?: Omit<Stack, 'app' | 'http'>): Promise<Stack> {
  const settings = loadSettings({
    env: {},
    overrides: {
      dataDir: dir,
      'server.port': 0,
      'load.sampleIntervalMs': 0,
      'mcp.allowPrivateUpstreams': allowPrivate,
    },
  });
  const app = await createApp(settings, { migrate: true, log: createLogger('silent'), lookup });
  const http = await createHttpServer(app);
  await http.start();
  if (seed) return { app, http, ...seed };
  const { workspaceId: wid } = await app.services.people.createWorkspace({
    name: 'Tools',
    ownerEmail: 'owner@tools.example',
    ownerPassword: 'correct horse battery staple',
  });
  const agent = await app.services.agents.create({ workspaceId: wid, name: 'tool-bot' });
  await app.services.mandates.put(
    wid,
    agent.id,
    { rules: [{ actions: ['mcp.*'], domains: ['*'] }], confirmBroaden: true },
    { actor: 'operator:test' },
  );
  const minted = await app.services.keys.mint(wid, { scope: 'agent', agentId: agent.id }, 'operator:test');
  return { app, http, wid, agentKey: minted.key };
}

async function close(s: Stack): Promise<void> {
  await s.http.stop();
  await s.app.close();
}

async function agentClient(s: Stack): Promise<Client> {
  const client = new Client({ name: 'dispatcher-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${s.http.baseUrl()}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${s.agentKey}` } },
    }),
  );
  return client;
}

/** An HTTP server on loopback that only counts what reaches it. */
async function counter() {
  let hits = 0;
  const server = createServer((_req, res) => {
    hits += 1;
    res.writeHead(500).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    hits: () => hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

test('an upstream whose name resolves to a link-local address is refused at connect, even with private upstreams allowed', async (t) => {
  const dir = await tempDir();
  const s = await stack(dir, true);
  try {
    const proxy = s.app.services.mcpProxy;
    await proxy.add(s.wid, { name: 'meta', url: 'https://metadata.test/mcp' }, 'user:test');
    const record = (await proxy.list(s.wid))[0]!;
    const err = await t.throwsAsync(proxy.open(record));
    t.regex(refusedBy(err)?.message ?? String(err), /link-local/);

    // What the agent sees: the call is gated and allowed, and the upstream is not contacted, saying why.
    const client = await agentClient(s);
    try {
      const failed = await t.throwsAsync(client.callTool({ name: 'meta__anything', arguments: {} }));
      t.true(failed instanceof McpError);
      t.is((failed as McpError).code, -32003);
      t.regex(failed!.message, /upstream MCP server meta was not contacted: it resolves to a link-local address/);
    } finally {
      await client.close();
    }
  } finally {
    await close(s);
    await removeDir(dir);
  }
});

test('a loopback upstream works when private upstreams are allowed', async (t) => {
  const dir = await tempDir();
  const upstream = await startMcpUpstream();
  const s = await stack(dir, true);
  try {
    await s.app.services.mcpProxy.add(s.wid, { name: 'files', url: upstream.url }, 'user:test');
    const client = await agentClient(s);
    try {
      const res = await client.callTool({ name: 'files__add', arguments: { a: 2, b: 40 } });
      t.deepEqual(res.content, [{ type: 'text', text: '42' }]);
      t.deepEqual(upstream.calls, [{ name: 'add', args: { a: 2, b: 40 } }]);
    } finally {
      await client.close();
    }
  } finally {
    await close(s);
    await upstream.close();
    await removeDir(dir);
  }
});

test('without mcp.allowPrivateUpstreams a loopback upstream is refused when added and at connect, and is never reached', async (t) => {
  const dir = await tempDir();
  const target = await counter();
  // Added while the operator allowed it...
  const before = await stack(dir, true);
  const seed = { wid: before.wid, agentKey: before.agentKey };
  await before.app.services.mcpProxy.add(before.wid, { name: 'local', url: target.url }, 'user:test');
  await before.app.services.mcpProxy.add(before.wid, { name: 'rebound', url: 'https://rebound.test/mcp' }, 'user:test');
  await close(before);
  // Adding it (while allowed) asked it for its tools, to pin them; from here on it must hear nothing.
  const atAdd = target.hits();
  // ...then the setting is turned off.
  const s = await stack(dir, false, seed);
  try {
    const proxy = s.app.services.mcpProxy;
    const added = await t.throwsAsync(proxy.add(s.wid, { name: 'again', url: target.url }, 'user:test'));
    t.true(added instanceof AppError);
    t.is((added as AppError).type, 'invalid_request');
    t.deepEqual((added as AppError).details?.errors, [
      { field: 'url', message: 'it resolves to a loopback address (allowed only with mcp.allowPrivateUpstreams)' },
    ]);

    for (const record of await proxy.list(s.wid)) {
      const err = await t.throwsAsync(proxy.open(record));
      t.regex(
        refusedBy(err)?.message ?? String(err),
        /loopback address \(allowed only with mcp\.allowPrivateUpstreams\)/,
      );
    }
    const client = await agentClient(s);
    try {
      const failed = await t.throwsAsync(client.callTool({ name: 'local__echo', arguments: { text: 'hi' } }));
      t.regex(failed!.message, /local was not contacted: it resolves to a loopback address/);
    } finally {
      await client.close();
    }
    t.is(target.hits() - atAdd, 0, 'not one request reached the loopback server');
  } finally {
    await close(s);
    await target.close();
    await removeDir(dir);
  }
});
