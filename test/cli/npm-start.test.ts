import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { mkdir, readFile, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { cleanEnv, removeDir, ROOT, tempDir } from '../helpers/process.js';

/**
 * `npm start` builds only when a source changed since the last build (scripts/build-if-changed.mjs),
 * so a restart does not pay for a full TypeScript build. Checked on a small package whose build
 * counts its runs and writes the manifest, as the real build does last.
 */

const SCRIPT = join(ROOT, 'scripts', 'build-if-changed.mjs');

test('npm start builds the first time and after a source changes, and not otherwise', async (t) => {
  const dir = await tempDir('svc-start-');
  try {
    await writeFile(
      join(dir, 'package.json'),
      JSON.stringify({ name: 'fixture', private: true, scripts: { build: 'node build.mjs' } }),
    );
    await writeFile(
      join(dir, 'build.mjs'),
      "import { appendFileSync, writeFileSync } from 'node:fs';\nappendFileSync('builds.log', 'built\\n');\nwriteFileSync('oclif.manifest.json', '{}');\n",
    );
    await mkdir(join(dir, 'src', 'cli', 'generated'), { recursive: true });
    await writeFile(join(dir, 'src', 'a.ts'), 'export const a = 1;\n');
    const start = () => {
      const began = Date.now();
      const res = spawnSync(process.execPath, [SCRIPT], { cwd: dir, encoding: 'utf8' });
      return { code: res.status, said: res.stderr, ms: Date.now() - began };
    };
    const builds = async () => (await readFile(join(dir, 'builds.log'), 'utf8').catch(() => '')).split('\n').length - 1;

    const first = start();
    t.is(first.code, 0, first.said);
    t.regex(first.said, /no build yet/);
    t.is(await builds(), 1);

    const again = start();
    t.is(again.code, 0);
    t.regex(again.said, /up to date/);
    t.is(await builds(), 1, 'nothing changed: no build');
    t.true(again.ms < 2000, `${again.ms} ms`);

    // What the build writes itself (the command index) is not a change.
    const later = new Date(Date.now() + 10_000);
    await writeFile(join(dir, 'src', 'cli', 'generated', 'commands.ts'), '');
    await utimes(join(dir, 'src', 'cli', 'generated', 'commands.ts'), later, later);
    t.regex(start().said, /up to date/);
    t.is(await builds(), 1);

    await utimes(join(dir, 'src', 'a.ts'), later, later);
    const changed = start();
    t.is(changed.code, 0);
    t.regex(changed.said, /src\/a\.ts changed since the last build/);
    t.is(await builds(), 2);
  } finally {
    await removeDir(dir);
  }
});

test("package.json's start script builds through the check", async (t) => {
  const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  t.regex(pkg.scripts.start!, /^node scripts\/build-if-changed\.mjs && node bin\/run\.js serve$/);
});

/** A port that was free a moment ago (the kernel's choice for port 0). */
async function freePort(): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as { port: number };
  probe.close();
  await once(probe, 'close');
  return port;
}

test('npm start -- --port N --data-dir D serves on that port from that data dir (the README says so)', async (t) => {
  const base = await tempDir('svc-start-flags-');
  const dataDir = join(base, 'elsewhere');
  const port = await freePort();
  // npm puts what follows `--` after the start script, that is after `svc serve`.
  const child = spawn('npm', ['start', '--', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir], {
    cwd: ROOT,
    env: cleanEnv({ SVC_LOG_LEVEL: 'info' }),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  const exited = once(child, 'exit');
  try {
    await new Promise<void>((done, fail) => {
      const timer = setTimeout(() => fail(new Error(`not listening within 180 s:\n${output}`)), 180_000);
      const seen = (d: Buffer) => {
        output += d.toString();
        // The banner may come a moment after the listening line (another stream): both are waited for.
        if (output.includes(`"address":"http://127.0.0.1:${port}"`) && output.includes('Sign in at')) {
          clearTimeout(timer);
          done();
        }
      };
      child.stdout.on('data', seen);
      child.stderr.on('data', seen);
      void exited.then(() => fail(new Error(`npm start exited:\n${output}`)));
    });
    t.regex(output, new RegExp(`Sign in at http://127\\.0\\.0\\.1:${port}/login`));
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    t.is(ready.status, 200);
    t.true(existsSync(join(dataDir, 'svc.mdb')), 'the store is in the data dir given');
    t.true(existsSync(join(dataDir, 'master.key')));
  } finally {
    // npm runs the server through a shell: stop the whole group this test started.
    if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, 'SIGTERM');
    await exited;
    await removeDir(base);
  }
});
