import { spawnSync } from 'node:child_process';
import { mkdir, readFile, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { removeDir, ROOT, tempDir } from '../helpers/process.js';

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
