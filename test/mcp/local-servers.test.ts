import test from 'ava';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { makeBot, SERVER_ENV, type Bot } from '../approvals/support.js';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { bearer } from '../helpers/http.js';
import { ROOT, stopAndClean, svc, tempDir } from '../helpers/process.js';
import { poll } from '../helpers/wait.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { loadSettings } from '../../src/settings/load.js';

/**
 * Issue 34 part 5: stdio MCP servers declared in the config file (`mcp.localServers`), run by svc
 * one process per upstream session: the SDK project's "everything" server over stdio, and a
 * fixture that crashes, hangs, floods stderr and reports its environment, unsandboxed and in
 * bubblewrap.
 */
const EVERYTHING = join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const FIXTURE = join(ROOT, 'test/fixtures/mcp-stdio/misbehaving.mjs');
const CALL_TIMEOUT_MS = 1_500;
const TIMEOUT_MS = 2_500;

let server: ServedInProcess;
let owner: Person;
let alice: Bot;
let bob: Bot;
let outside: string;
let listener: Server;
let port: number;

const local = (id: string, args: string[], extra: Record<string, unknown> = {}) => ({
  id,
  command: process.execPath,
  args,
  ...extra,
});

test.before(async () => {
  // Outside /tmp, which the sandbox replaces with a tmpfs of its own.
  outside = await mkdtemp('/var/tmp/svc-local-outside-');
  listener = createServer((socket) => socket.end());
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  port = (listener.address() as { port: number }).port;
  server = await serveInProcess({
    logLevel: 'warn',
    env: {
      ...SERVER_ENV,
      PATH: process.env.PATH,
      SVC_MCP_UPSTREAM_CALL_TIMEOUT_MS: String(CALL_TIMEOUT_MS),
      SVC_MCP_UPSTREAM_TIMEOUT_MS: String(TIMEOUT_MS),
      LOCAL_PASSED: 'passed',
      LOCAL_KEPT: 'never passed',
    },
    config: {
      mcp: {
        localServers: [
          local('ev', [EVERYTHING, 'stdio']),
          local('fx', [FIXTURE], { env: ['LOCAL_PASSED', 'LOCAL_UNSET'] }),
          local('box', [FIXTURE], { sandbox: 'bwrap' }),
          local('elsewhere', [FIXTURE], { workspaces: ['w_not_this_one'] }),
          local('mute', [FIXTURE, '--mute']),
          local('solo', [FIXTURE], { maxProcesses: 2 }),
        ],
      },
    },
  });
  owner = await ownerConsole(server);
  const rules = [{ actions: ['mcp.*'], domains: ['*'] }];
  alice = await makeBot(owner, 'alice-bot', rules);
  bob = await makeBot(owner, 'bob-bot', rules);
  // Every tool of the local servers is approved by the owner, as for a remote server's.
  for (const name of ['ev', 'fx', 'box', 'solo']) {
    const tools = expectStatus(await owner.get(`/mcp-servers/${name}/tools`), 200, `${name} tools`).body;
    for (const pin of tools.data as Array<{ tool: string; changed: { hash: string } }>)
      expectStatus(
        await owner.send('POST', `/mcp-servers/${name}/tools/${pin.tool}/approve`, { hash: pin.changed.hash }),
        200,
        `approve ${pin.tool}`,
      );
  }
});

test.after.always(async () => {
  await stopAndClean(server);
  listener?.close();
  await rm(outside, { recursive: true, force: true });
});

/** A caller session of the agent's (an SDK client); `end` ends it (DELETE /mcp), and with it its processes. */
async function session(key: string): Promise<Client & { end: () => Promise<void> }> {
  const client = new Client({ name: 'local-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
    requestInit: { headers: bearer(key) },
  });
  await client.connect(transport);
  return Object.assign(client, {
    end: async () => {
      await transport.terminateSession();
      await client.close();
    },
  });
}
const text = (r: unknown) => (r as { content: Array<{ text: string }> }).content[0]!.text;
const call = async (client: Client, name: string, args: Record<string, unknown> = {}) =>
  text(await client.callTool({ name, arguments: args }));
/** The structured log lines svc wrote so far. */
const logLines = () =>
  server
    .logs()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

test('a local server is among the workspace MCP servers: kind local, enabled, no url and no command', async (t) => {
  const list = expectStatus(await owner.get('/mcp-servers'), 200, 'list').body.data as Array<Record<string, unknown>>;
  const ev = list.find((s) => s.name === 'ev')!;
  t.is(ev.kind, 'local');
  t.is(ev.enabled, true);
  t.false('url' in ev);
  t.false(JSON.stringify(list).includes(process.execPath), 'the command is never shown');
  t.false(
    list.some((s) => s.name === 'elsewhere'),
    'a server declared for other workspaces is not here',
  );
});

test('a local server waits for approval, then server-everything over stdio answers through svc', async (t) => {
  const tools = expectStatus(await owner.get('/mcp-servers/ev/tools'), 200, 'tools').body;
  t.true(tools.reachable);
  t.true((tools.data as Array<{ status: string }>).every((p) => p.status === 'approved'));
  const client = await session(alice.key);
  const listed = (await client.listTools()).tools.map((x) => x.name);
  t.true(listed.includes('ev__echo'));
  t.is(await call(client, 'ev__echo', { message: 'over stdio' }), 'Echo: over stdio');
  await client.end();
});

test('each agent gets its own child process, and a caller session keeps its own', async (t) => {
  const a = await session(alice.key);
  const b = await session(bob.key);
  const pa = await call(a, 'fx__pid');
  const pb = await call(b, 'fx__pid');
  t.not(pa, pb);
  t.is(await call(a, 'fx__pid'), pa, "alice's calls stay on her process");
  t.regex(await call(a, 'fx__cwd'), /svc-mcp-fx-/);
  t.not(await call(a, 'fx__cwd'), await call(b, 'fx__cwd'), 'each process has a working directory of its own');
  const cwd = await call(a, 'fx__cwd');
  await a.end();
  await b.end();
  t.true(
    await poll(
      () => !existsSync(cwd),
      (gone) => gone,
    ),
    'the working directory is removed when the session ends',
  );
});

test('a child is given only the variables its config names, and a PATH, HOME and TMPDIR of its own', async (t) => {
  const client = await session(alice.key);
  const env = JSON.parse(await call(client, 'fx__env')) as Record<string, string>;
  t.deepEqual(Object.keys(env).sort(), ['HOME', 'LOCAL_PASSED', 'PATH', 'TMPDIR']);
  t.is(env.LOCAL_PASSED, 'passed');
  t.is(env.HOME, await call(client, 'fx__cwd'));
  await client.end();
});

test('a crash fails the call naming the local server; the next call starts a new process after a backoff', async (t) => {
  const client = await session(bob.key);
  const before = await call(client, 'fx__pid');
  const err = await t.throwsAsync(client.callTool({ name: 'fx__crash', arguments: {} }), { instanceOf: McpError });
  t.regex(err.message, /local MCP server fx failed: its process ended/);
  const after = await poll(
    () => client.callTool({ name: 'fx__pid', arguments: {} }).then(text, () => 'refused'),
    (p) => p !== 'refused',
  );
  t.regex(after, /^\d+$/);
  t.not(after, before);
  const exited = logLines().find((l) => l.msg === 'local MCP server process exited' && l.pid === Number(before));
  t.like(exited, { mcpLocalServer: 'fx', code: 3 });
  t.true(
    logLines().some((l) => l.stderr === 'crashing on request' && l.mcpLocalServer === 'fx'),
    "the child's stderr is in svc's log",
  );
  await client.end();
});

test('a process that writes stdout past the read bound without a message is killed, svc unharmed', async (t) => {
  const client = await session(alice.key);
  const pid = Number(await call(client, 'fx__pid'));
  // The call fails: the process killed, or (on a loaded machine) the call's deadline first.
  await t.throwsAsync(client.callTool({ name: 'fx__garble', arguments: {} }), { instanceOf: McpError });
  const killed = await poll(
    () => logLines().find((l) => l.msg === 'local MCP server process exited' && l.pid === pid),
    (l) => l !== undefined,
  );
  t.like(killed, { mcpLocalServer: 'fx', signal: 'SIGKILL' });
  const again = await poll(
    () => client.callTool({ name: 'fx__pid', arguments: {} }).then(text, () => 'refused'),
    (p) => p !== 'refused',
  );
  t.not(again, String(pid));
  await client.end();
});

test('a call that hangs fails at the call deadline, and the process keeps serving', async (t) => {
  const client = await session(alice.key);
  const pid = await call(client, 'fx__pid');
  const started = Date.now();
  const err = await t.throwsAsync(client.callTool({ name: 'fx__hang', arguments: {} }), { instanceOf: McpError });
  t.regex(err.message, /did not answer within/);
  t.true(Date.now() - started < CALL_TIMEOUT_MS * 4);
  t.is(await call(client, 'fx__pid'), pid);
  await client.end();
});

test('a process that never answers initialize is ended at the deadline, its folder removed', async (t) => {
  const status = expectStatus(await owner.get('/mcp-servers/mute/tools'), 200, 'tools').body;
  t.false(status.reachable);
  t.is(status.problem.cause, 'timeout');
  const left = await poll(
    async () => (await readdir(tmpdir())).filter((name) => name.startsWith('svc-mcp-mute-')),
    (names) => names.length === 0,
  );
  t.deepEqual(left, [], 'no process (nor its working directory) is left');
});

test('a stderr flood is logged up to its limit, and the lines left out are counted', async (t) => {
  const client = await session(alice.key);
  const pid = Number(await call(client, 'fx__pid'));
  t.is(await call(client, 'fx__flood', { lines: 2000 }), 'wrote 2000 lines');
  await client.end();
  // Each window of 10 s logs 50 lines at most (a loaded machine may spread the flood over two).
  const count = () => {
    const lines = logLines().filter((l) => l.pid === pid);
    const logged = lines.filter((l) => l.msg === 'local MCP server stderr').length;
    const dropped = lines
      .filter((l) => l.msg === 'local MCP server stderr lines left out')
      .reduce((n, l) => n + (l.dropped as number), 0);
    return { logged, dropped };
  };
  // The count of lines left out is logged when a window closes (10 s) or the process ends.
  const seen = await poll(count, (c) => c.logged + c.dropped === 2000, { timeoutMs: 30_000, everyMs: 50 });
  t.is(seen.logged + seen.dropped, 2000, 'every line is logged or counted');
  t.true(seen.logged >= 50 && seen.logged <= 100, `${seen.logged} lines logged`);
});

test('in bwrap the process has no network and a read-only root; its working directory is writable', async (t) => {
  const client = await session(alice.key);
  t.is(await call(client, 'fx__connect', { port }), 'connected', 'unsandboxed, the loopback port is reachable');
  t.regex(await call(client, 'box__connect', { port }), /^refused: E/);
  t.regex(await call(client, 'box__write', { path: join(outside, 'escaped') }), /^refused: EROFS/);
  t.false(existsSync(join(outside, 'escaped')));
  const cwd = await call(client, 'box__cwd');
  t.is(await call(client, 'box__write', { path: join(cwd, 'mine') }), 'written');
  await client.end();
});

test.serial('a local server is disabled and enabled in the console, and never removed there', async (t) => {
  const removed = await owner.send('DELETE', '/mcp-servers/fx');
  t.is(removed.status, 400);
  t.regex(removed.body.error.message, /local server of the configuration/);
  const off = expectStatus(await owner.send('PATCH', '/mcp-servers/fx', { enabled: false }), 200, 'disable').body;
  t.is(off.enabled, false);
  const client = await session(bob.key);
  t.false((await client.listTools()).tools.some((x) => x.name.startsWith('fx__')));
  expectStatus(await owner.send('PATCH', '/mcp-servers/fx', { enabled: true }), 200, 'enable');
  t.true((await client.listTools()).tools.some((x) => x.name === 'fx__pid'));
  await client.end();
  const taken = await owner.send('POST', '/mcp-servers', { name: 'fx', url: 'https://example.com/mcp' });
  t.is(taken.status, 400);
});

test('svc refuses to start when a sandboxed server has no bwrap, or a command is not found', async (t) => {
  const dir = await tempDir();
  const config = join(dir, 'config.json');
  const start = async (servers: unknown[]) => {
    await writeFile(config, JSON.stringify({ mcp: { localServers: servers } }));
    const result = await svc(['serve', '--data-dir', join(dir, 'data'), '--config', config, '--port', '0'], {
      env: { PATH: '/nonexistent' },
    });
    // The message as one line (the terminal's wrapping undone).
    return { ...result, stderr: result.stderr.replace(/\s*\n\s*›?\s*/g, ' ') };
  };
  const noBwrap = await start([local('box', [FIXTURE], { sandbox: 'bwrap' })]);
  t.is(noBwrap.code, 2);
  t.regex(noBwrap.stderr, /mcp\.localServers \(box\): sandbox is bwrap, and bubblewrap \(bwrap\) is not installed/);
  const noCommand = await start([{ id: 'gone', command: 'no-such-mcp-server' }]);
  t.is(noCommand.code, 2);
  t.regex(noCommand.stderr, /mcp\.localServers \(gone\): the command no-such-mcp-server is not found on PATH/);
  await rm(dir, { recursive: true, force: true });
});

test.serial('past its maxProcesses, a local server refuses another session naming the cap', async (t) => {
  // Of solo's two processes, the console's look at its tools (in test.before) holds one.
  const a = await session(alice.key);
  const b = await session(bob.key);
  // A process of an earlier test's session may still be ending: a call is tried until it has room.
  const until = (c: Client) =>
    poll(
      () => c.callTool({ name: 'solo__pid', arguments: {} }).then(text, () => 'refused'),
      (p) => p !== 'refused',
    );
  t.regex(await until(a), /^\d+$/);
  const full = await t.throwsAsync(b.callTool({ name: 'solo__pid', arguments: {} }), { instanceOf: McpError });
  t.regex(full.message, /local MCP server solo runs as many processes as it may \(2, its maxProcesses/);
  t.like(full.data, { type: 'upstream_sessions_full', cap: 2 });
  await a.end();
  t.regex(await until(b), /^\d+$/, 'a process ended makes room');
  await b.end();
});

test('the config names a local server by a unique id, and its environment by names only', (t) => {
  const load = (localServers: unknown[]) => () =>
    loadSettings({ env: { FOR_IT: 'value', NOT_FOR_IT: 'kept' }, overrides: { 'mcp.localServers': localServers } });
  t.throws(load([{ id: 'a b', command: '/bin/true' }]), { message: /mcp.localServers.0.id/ });
  t.throws(
    load([
      { id: 'same', command: '/bin/true' },
      { id: 'same', command: '/bin/true' },
    ]),
    { message: /mcp.localServers.1: .*duplicate/ },
  );
  t.throws(load([{ id: 'v', command: '/bin/true', envValues: { X: 'y' } }]), {
    message: /may not be in a config file: name the variables in env/,
  });
  const [loaded] = load([{ id: 'ok', command: '/bin/true', env: ['FOR_IT', 'UNSET'] }])().mcp.localServers;
  t.deepEqual(loaded!.envValues, { FOR_IT: 'value' });
  t.like(loaded, { sandbox: 'none', network: false, workspaces: null, memoryMb: 2048, maxProcesses: 16 });
});
