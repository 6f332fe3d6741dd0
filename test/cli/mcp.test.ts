import test from 'ava';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ownerConsole, type Person } from '../helpers/console.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { startMcpUpstream, type McpUpstream } from '../helpers/mcp-upstream.js';
import { removeDir, stopAndClean, svc, tempDir, type CliResult } from '../helpers/process.js';

/**
 * `svc mcp servers add|list|test|remove` and `svc mcp tools list|approve`, spawned against a
 * real server on 127.0.0.1 with a loopback MCP upstream, signed in with a service token
 * (SVC_TOKEN, mcp:read and mcp:write): text and --json, the errors' envelope and exit codes,
 * and what each leaves in the server (the console's view, the ledger). `add --from` reads an MCP
 * Registry server.json: its streamable-http remote is added; a local (stdio) package is refused
 * by name.
 */
let server: ServedInProcess;
let upstream: McpUpstream;
let owner: Person;
let dir: string;
const env: Record<string, string> = {};

const mcp = (args: string[], extra: Record<string, string> = {}): Promise<CliResult> =>
  svc(['mcp', ...args, '--url', server.url], { env: { ...env, ...extra } });
const json = (r: CliResult) => JSON.parse(r.stdout);

test.before(async () => {
  upstream = await startMcpUpstream({ secret: 'upstream-secret-1' });
  server = await serveInProcess({ env: { SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1', SVC_SIGNIN_RATE_PER_MINUTE: '1000' } });
  owner = await ownerConsole(server);
  const token = await server.app.services.serviceTokens.create(owner.wid, {
    name: 'cli-mcp',
    scopes: ['mcp:read', 'mcp:write'],
    expiresInDays: 1,
  });
  env.SVC_TOKEN = token.token;
  dir = await tempDir('svc-mcp-cli-');
});

test.after.always(async () => {
  await stopAndClean(server);
  await upstream?.close();
  if (dir) await removeDir(dir);
});

test.serial('servers add: the tools pinned, the secret from its variable, recorded under the token', async (t) => {
  const added = await mcp(
    ['servers', 'add', 'files', upstream.url, '--secret-env', 'FILES_TOKEN', '--allow', 'echo,add', '--json'],
    { FILES_TOKEN: 'upstream-secret-1' },
  );
  t.is(added.code, 0, added.stderr);
  t.like(json(added), { name: 'files', url: upstream.url, hasSecret: true, allowTools: ['echo', 'add'] });
  t.deepEqual([...json(added).pinnedTools].sort(), ['add', 'echo']);
  t.false(added.stdout.includes('upstream-secret-1'));
  t.like((await owner.get('/mcp-servers')).body.data[0], { name: 'files', hasSecret: true });
  t.like(
    (await owner.ledger()).find((r) => r.kind === 'mcp.server_added'),
    { actor: 'token:cli-mcp', subject: 'files' },
  );

  const text = await mcp(['servers', 'add', 'plain', upstream.url], { FILES_TOKEN: 'unused' });
  t.is(text.code, 0, text.stderr);
  // Without its secret the upstream answers 401: added, its tools withheld, and the text says so.
  t.regex(text.stdout, /^Added plain \(http:\/\/127\.0\.0\.1:\d+\/mcp\), but it could not be listed/m);
  t.regex(text.stdout, /svc mcp servers test plain/);
});

test.serial('servers add: a missing variable, no URL or no token is a usage error; a taken name exit 2', async (t) => {
  const unset = await mcp(['servers', 'add', 'x', upstream.url, '--secret-env', 'NOT_SET_ANYWHERE', '--json']);
  t.is(unset.code, 2);
  t.like(json(unset), { error: { type: 'usage', exitCode: 2 } });
  t.regex(json(unset).error.message, /NOT_SET_ANYWHERE/);

  const nothing = await mcp(['servers', 'add', 'x', '--json']);
  t.is(nothing.code, 2);
  t.is(json(nothing).error.type, 'usage');

  const taken = await mcp(['servers', 'add', 'files', upstream.url, '--json']);
  t.is(taken.code, 2);
  t.like(json(taken), { error: { type: 'invalid_request', exitCode: 2 } });

  const anonymous = await svc(['mcp', 'servers', 'list', '--url', server.url, '--json']);
  t.is(anonymous.code, 2);
  t.like(json(anonymous), { error: { type: 'unauthenticated', exitCode: 2 } });
  t.truthy(json(anonymous).error.fix);
});

test.serial('a token without the scope is refused by the server: exit 1, missing_scope', async (t) => {
  const reader = await server.app.services.serviceTokens.create(owner.wid, {
    name: 'reader',
    scopes: ['mcp:read'],
    expiresInDays: 1,
  });
  const res = await mcp(['servers', 'remove', 'files', '--json'], { SVC_TOKEN: reader.token });
  t.is(res.code, 1);
  t.like(json(res), { error: { type: 'missing_scope', exitCode: 1 } });
  t.is((await owner.get('/mcp-servers')).body.data.length, 2);
});

test.serial('servers list, text and --json', async (t) => {
  const listed = await mcp(['servers', 'list', '--json']);
  t.is(listed.code, 0, listed.stderr);
  t.deepEqual(
    json(listed)
      .data.map((s: { name: string }) => s.name)
      .sort(),
    ['files', 'plain'],
  );
  const text = await mcp(['servers', 'list']);
  t.is(text.code, 0, text.stderr);
  t.true(text.stdout.includes(`files  ${upstream.url}  (secret)  allow: echo,add`), text.stdout);
  t.true(text.stdout.includes(`plain  ${upstream.url}\n`), text.stdout);
});

test.serial('servers test: exit 0 when it answers; exit 1 with the cause when it cannot be used', async (t) => {
  const ok = await mcp(['servers', 'test', 'files']);
  t.is(ok.code, 0, ok.stderr);
  t.is(ok.stdout.trim(), `files (${upstream.url}) answers: 2 tool(s), 0 waiting for approval`);

  upstream.down = true;
  try {
    const down = await mcp(['servers', 'test', 'files', '--json']);
    t.is(down.code, 1, down.stderr);
    t.like(json(down), { name: 'files', reachable: false });
    t.true(json(down).problem.message.length > 0);
    const text = await mcp(['servers', 'test', 'files']);
    t.is(text.code, 1);
    t.true(
      text.stdout.startsWith(`files (${upstream.url}) cannot be used: ${json(down).problem.message}`),
      text.stdout,
    );
  } finally {
    upstream.down = false;
  }

  const none = await mcp(['servers', 'test', 'nothing', '--json']);
  t.is(none.code, 1);
  t.like(json(none), { error: { type: 'not_found', exitCode: 1 } });
});

test.serial('tools list and approve: a change shows with its hash, and is approved by it', async (t) => {
  const before = await mcp(['tools', 'list', 'files']);
  t.is(before.code, 0, before.stderr);
  t.regex(before.stdout, /^files {2}echo {2}approved {2}[0-9a-f]{64}$/m);

  upstream.change('echo', { description: 'Says the text back, then some.' });
  const listed = await mcp(['tools', 'list', '--json']);
  t.is(listed.code, 0, listed.stderr);
  const echo = json(listed).data.find(
    (x: { server: string; tool: string }) => x.server === 'files' && x.tool === 'echo',
  );
  t.like(echo, { status: 'changed', changed: { description: 'Says the text back, then some.' } });
  // The server without its secret cannot be listed: named, not fatal.
  t.deepEqual(json(listed).unreachable, ['plain']);
  const text = await mcp(['tools', 'list', 'files']);
  t.true(text.stdout.includes(`files  echo  changed   ${echo.changed.hash}`), text.stdout);

  const stale = await mcp(['tools', 'approve', 'files', 'echo', '--hash', 'b'.repeat(64), '--json']);
  t.is(stale.code, 2);
  t.like(json(stale), { error: { type: 'invalid_request', exitCode: 2 } });

  const approved = await mcp(['tools', 'approve', 'files', 'echo', '--hash', echo.changed.hash, '--json']);
  t.is(approved.code, 0, approved.stderr);
  t.like(json(approved), {
    approved: true,
    pin: { tool: 'echo', status: 'approved', approved: { by: 'token:cli-mcp' } },
  });
  t.like(
    (await owner.ledger()).find((r) => r.kind === 'mcp.tool_approved'),
    { actor: 'token:cli-mcp', data: { tool: 'echo', newHash: echo.changed.hash } },
  );

  // Without --hash: the state listed now; a tool already approved is left as it is.
  upstream.change('add', { description: 'Adds two numbers, carefully.' });
  const now = await mcp(['tools', 'approve', 'files', 'add']);
  t.is(now.code, 0, now.stderr);
  t.regex(now.stdout, /^Approved files add \([0-9a-f]{64}\): it is served again\.$/m);
  const again = await mcp(['tools', 'approve', 'files', 'add', '--json']);
  t.is(again.code, 0, again.stderr);
  t.like(json(again), { approved: false, pin: { status: 'approved' } });
  // A limit alone, on a tool already approved; a limit out of range is a usage error.
  const limited = await mcp(['tools', 'approve', 'files', 'add', '--calls-per-minute', '5', '--json']);
  t.is(limited.code, 0, limited.stderr);
  t.like(json(limited), { approved: true, pin: { status: 'approved', callsPerMinute: 5 } });
  const zero = await mcp(['tools', 'approve', 'files', 'add', '--calls-per-minute', '0', '--json']);
  t.is(zero.code, 2);
  t.like(json(zero), { error: { type: 'usage', exitCode: 2 } });
  const unknown = await mcp(['tools', 'approve', 'files', 'nope', '--json']);
  t.is(unknown.code, 1);
  t.like(json(unknown), { error: { type: 'not_found', exitCode: 1 } });
});

test.serial(
  'servers add --from a server.json: its streamable-http remote, with the bearer token it asks for',
  async (t) => {
    const file = join(dir, 'server.json');
    await writeFile(
      file,
      JSON.stringify({
        $schema: 'https://static.modelcontextprotocol.io/schemas/2025-10-17/server.schema.json',
        name: 'io.github.acme/fixture-files',
        description: 'Files',
        version: '1.2.0',
        remotes: [
          { type: 'sse', url: 'https://acme.example/sse' },
          {
            type: 'streamable-http',
            url: upstream.url,
            headers: [{ name: 'Authorization', value: 'Bearer {token}', isRequired: true, isSecret: true }],
          },
        ],
      }),
    );
    const noSecret = await mcp(['servers', 'add', '--from', file, '--json']);
    t.is(noSecret.code, 2);
    t.like(json(noSecret), { error: { type: 'usage', exitCode: 2 } });
    t.regex(json(noSecret).error.fix, /--secret-env/);

    const added = await mcp(['servers', 'add', '--from', file, '--secret-env', 'FILES_TOKEN', '--json'], {
      FILES_TOKEN: 'upstream-secret-1',
    });
    t.is(added.code, 0, added.stderr);
    t.like(json(added), { name: 'fixture-files', url: upstream.url, hasSecret: true });
    t.is(json(added).pinnedTools.length, 4);
  },
);

test.serial(
  'servers add --from: a local package, a bad file and a missing file are refused, nothing added',
  async (t) => {
    const local = join(dir, 'local.json');
    await writeFile(
      local,
      JSON.stringify({
        name: 'io.github.acme/local-fs',
        version: '0.3.0',
        packages: [
          { registryType: 'npm', identifier: '@acme/local-fs', version: '0.3.0', transport: { type: 'stdio' } },
        ],
      }),
    );
    const refused = await mcp(['servers', 'add', '--from', local, '--json']);
    t.is(refused.code, 2);
    const error = json(refused).error;
    t.like(error, { type: 'invalid_request', exitCode: 2 });
    t.regex(
      error.message,
      /io\.github\.acme\/local-fs is a local server \(npm package @acme\/local-fs 0\.3\.0, stdio\)/,
    );
    t.regex(error.fix, /configuration file/);
    const text = await mcp(['servers', 'add', '--from', local]);
    t.is(text.code, 2);
    t.regex(text.stderr, /local server \(npm package/);

    const bad = join(dir, 'bad.json');
    await writeFile(bad, '{"name": 42}');
    const malformed = await mcp(['servers', 'add', '--from', bad, '--json']);
    t.is(malformed.code, 2);
    t.like(json(malformed), { error: { type: 'invalid_request', errors: [{ field: 'name' }] } });

    const missing = await mcp(['servers', 'add', '--from', join(dir, 'absent.json'), '--json']);
    t.is(missing.code, 2);
    t.like(json(missing), { error: { type: 'usage', exitCode: 2 } });
    t.regex(json(missing).error.message, /absent\.json: there is no such file$/);
    t.is((await owner.get('/mcp-servers')).body.data.length, 3);
  },
);

test.serial('servers remove: gone from the server, recorded under the token', async (t) => {
  const removed = await mcp(['servers', 'remove', 'plain', '--json']);
  t.is(removed.code, 0, removed.stderr);
  t.deepEqual(json(removed), { name: 'plain', removed: true });
  const text = await mcp(['servers', 'remove', 'fixture-files']);
  t.is(text.stdout.trim(), 'Removed fixture-files.');
  t.like(
    (await owner.ledger()).find((r) => r.kind === 'mcp.server_removed'),
    { actor: 'token:cli-mcp', subject: 'plain' },
  );
  t.deepEqual(
    (await owner.get('/mcp-servers')).body.data.map((s: { name: string }) => s.name),
    ['files'],
  );
  const again = await mcp(['servers', 'remove', 'plain', '--json']);
  t.is(again.code, 1);
  t.like(json(again), { error: { type: 'not_found', exitCode: 1 } });
});
