import test from 'ava';
import { spawn } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { BIN, cleanEnv, ROOT, tempDir } from '../helpers/process.js';

/**
 * Fast commands (issue 18.7): the command line loads what the command run needs and nothing else.
 * `svc --version` loads no oclif; a command through the server loads neither the app (the
 * composition root and its domains), nor the store's lmdb, nor hapi, nor the undici package (Node's
 * own fetch is enough); `svc --help` loads no command at all (oclif.manifest.json holds their help).
 * The modules a spawned svc resolves are written by test/helpers/trace-imports.mjs.
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
