import test from 'ava';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { BIN, cleanEnv, initArgs, removeDir, ROOT, tempDir } from '../helpers/process.js';

/**
 * Fast commands (issue 18.7): the command line loads what the command run needs and nothing else.
 * `svc --version` loads no oclif; a command through the server loads neither the app (the
 * composition root and its domains), nor the store's lmdb, nor hapi, nor the undici package (Node's
 * own fetch is enough); `svc --help` loads no command at all (oclif.manifest.json holds their help).
 * The modules a spawned svc resolves are written by test/helpers/trace-imports.mjs.
 *
 * Less CPU per spawned command (issue 16): a command that opens the store (`svc init`, the
 * `--local` commands, `ledger verify`) loads the app but none of the server-only services (the
 * model gateway, MCP, OAuth, the integrations, drills, the scorecard) nor their libraries, nor
 * the webhooks' sending half, nor the PostgreSQL driver for an LMDB store, nor pino-pretty;
 * `receipt verify` against a key set file loads no undici. `svc serve` builds every service and its
 * routes, but the libraries of what only a request uses (stripe, jose, AWS's signer) come with it.
 */
async function loaded(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; urls: string[] }> {
  const dir = await tempDir('svc-trace-');
  const out = join(dir, 'trace.txt');
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        ['--import', join(ROOT, 'test', 'helpers', 'trace-imports.mjs'), BIN, ...args],
        { cwd: ROOT, env: cleanEnv({ ...env, SVC_TEST_TRACE: out }), stdio: 'ignore' },
      );
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      child.on('error', reject);
      child.on('close', (c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
    return { code, urls: (await readFile(out, 'utf8')).split('\n') };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const from = (urls: string[], part: string) => urls.filter((u) => u.includes(part));

test('svc --version answers before oclif or any command loads', async (t) => {
  const { code, urls } = await loaded(['--version']);
  t.is(code, 0);
  t.deepEqual(from(urls, '/node_modules/'), []);
  t.deepEqual(from(urls, '/dist/commands/'), []);
});

test('svc --help prints every command from the manifest, loading neither oclif nor any command', async (t) => {
  const { code, urls } = await loaded(['--help']);
  t.is(code, 0);
  t.deepEqual(from(urls, '/@oclif/core/'), []);
  t.deepEqual(from(urls, '/dist/commands/'), []);
});

test("svc freeze --help is oclif's, from the manifest: no command is loaded", async (t) => {
  const { code, urls } = await loaded(['freeze', '--help']);
  t.is(code, 0);
  t.true(from(urls, '/@oclif/core/').length > 0);
  t.deepEqual(from(urls, '/dist/commands/'), []);
  t.deepEqual(from(urls, '/node_modules/semver/'), [], "oclif's engine check is off");
});

test('svc freeze through the server loads its own command and the client: no app, lmdb, hapi or undici package', async (t) => {
  // A closed port: the command runs all the way to the request (exit 3, unreachable).
  const { code, urls } = await loaded(
    ['freeze', '--agent', 'agt_0000000000000000000000', '--reason', 'r', '--url', 'http://127.0.0.1:9'],
    {
      SVC_TOKEN: 'ims_x',
    },
  );
  t.is(code, 3);
  t.deepEqual(
    from(urls, '/dist/commands/').map((u) => u.slice(u.indexOf('/dist/') + 1)),
    ['dist/commands/freeze.js'],
  );
  for (const heavy of [
    '/dist/src/app.js',
    '/dist/src/store/index.js',
    '/node_modules/lmdb/',
    '/node_modules/@hapi/',
    '/node_modules/undici/',
    '/node_modules/joi/',
    '/node_modules/jose/',
  ])
    t.deepEqual(from(urls, heavy), [], heavy);
});

test('svc mcp tools list through the server loads its command and the client: no app, MCP SDK, joi or hapi', async (t) => {
  const { code, urls } = await loaded(['mcp', 'tools', 'list', '--url', 'http://127.0.0.1:9'], { SVC_TOKEN: 'ims_x' });
  t.is(code, 3);
  t.deepEqual(
    from(urls, '/dist/commands/').map((u) => u.slice(u.indexOf('/dist/') + 1)),
    ['dist/commands/mcp/tools/list.js'],
  );
  // joi comes only with `servers add --from` (the server.json's schema).
  for (const heavy of [
    '/dist/src/app.js',
    '/dist/src/mcp/',
    '/dist/src/cli/mcp-registry.js',
    '/node_modules/@modelcontextprotocol/',
    '/node_modules/@hapi/',
    '/node_modules/joi/',
    '/node_modules/undici/',
  ])
    t.deepEqual(from(urls, heavy), [], heavy);
});

/** What no command that opens the store needs: the server's own services and their libraries. */
const SERVER_ONLY = [
  '/dist/src/gateway/',
  '/dist/src/mcp/',
  '/dist/src/oauth/service.js',
  '/dist/src/integrations/stripe/',
  '/dist/src/integrations/github/',
  '/dist/src/integrations/ssf/',
  '/dist/src/drills/',
  '/dist/src/scorecard/',
  '/dist/src/webhooks/send.js',
  '/dist/src/observability/',
  '/node_modules/@hapi/hapi/',
  '/node_modules/@modelcontextprotocol/',
  '/node_modules/zod/',
  '/node_modules/stripe/',
  '/node_modules/undici/',
  '/node_modules/jose/',
  '/node_modules/prom-client/',
  '/node_modules/@smithy/',
  '/node_modules/@aws-crypto/',
  '/node_modules/pg/',
  '/node_modules/pino-pretty/',
];

test('svc init and the commands that open the store load the app without the server-only services or their libraries', async (t) => {
  const dir = await tempDir('svc-trace-store-');
  try {
    const dataDir = join(dir, 'data');
    const init = await loaded([...initArgs(dataDir), '--json']);
    t.is(init.code, 0);
    for (const [args, code] of [
      // A second init opens the store and refuses: it already has a workspace.
      [initArgs(dataDir), 2],
      [['keys', 'list', '--local', '--data-dir', dataDir, '--json'], 0],
      [['keys', 'create', '--scope', 'admin', '--local', '--data-dir', dataDir, '--json'], 0],
      [['agents', 'list', '--local', '--data-dir', dataDir, '--json'], 0],
      [['ledger', 'verify', '--data-dir', dataDir, '--json'], 0],
    ] as const) {
      const run = await loaded([...args]);
      t.is(run.code, code, args.join(' '));
      // The app was loaded (the command really opened the store)...
      t.true(from(run.urls, '/dist/src/app.js').length > 0, args.join(' '));
      // ...and nothing only the server uses.
      for (const heavy of SERVER_ONLY) t.deepEqual(from(run.urls, heavy), [], `${args.join(' ')}: ${heavy}`);
    }
    for (const heavy of SERVER_ONLY) t.deepEqual(from(init.urls, heavy), [], `init: ${heavy}`);
  } finally {
    await removeDir(dir);
  }
});

test('svc receipt verify against a key set file loads neither the app nor undici', async (t) => {
  const fixtures = join(ROOT, 'test', 'fixtures', 'receipts');
  const golden = (await readFile(join(fixtures, 'golden-receipt.jwt'), 'utf8')).trim();
  const { code, urls } = await loaded(['receipt', 'verify', golden, '--jwks', join(fixtures, 'jwks.json'), '--json']);
  t.is(code, 0);
  for (const heavy of ['/dist/src/app.js', '/node_modules/undici/', '/node_modules/lmdb/', '/node_modules/@hapi/'])
    t.deepEqual(from(urls, heavy), [], heavy);
});

test('svc serve builds every service and route before it listens, without stripe, jose or the AWS signer', async (t) => {
  // A held port: serve builds the app and the HTTP server, then cannot listen (exit 3).
  const held = createServer();
  await new Promise<void>((resolve) => held.listen(0, '127.0.0.1', resolve));
  const { port } = held.address() as { port: number };
  const dir = await tempDir('svc-trace-serve-');
  try {
    const { code, urls } = await loaded([
      'serve',
      '--data-dir',
      join(dir, 'data'),
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--json',
    ]);
    t.is(code, 3);
    for (const built of [
      '/dist/src/server.js',
      '/dist/src/gateway/service.js',
      '/dist/src/mcp/http.js',
      '/dist/src/integrations/stripe/signature.js',
      '/dist/src/integrations/ssf/verifier.js',
      '/dist/src/gateway/vendors/bedrock-sign.js',
      '/node_modules/@hapi/hapi/',
    ])
      t.true(from(urls, built).length > 0, built);
    for (const heavy of [
      '/node_modules/stripe/',
      '/node_modules/jose/',
      '/node_modules/@smithy/',
      '/node_modules/@aws-crypto/',
      '/node_modules/pg/',
      '/node_modules/pino-pretty/',
    ])
      t.deepEqual(from(urls, heavy), [], heavy);
  } finally {
    held.close();
    await removeDir(dir);
  }
});
