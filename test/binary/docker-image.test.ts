import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { ROOT } from '../helpers/process.js';

/**
 * The default Docker image (the Dockerfile's last stage) holds what the npm package ships: no
 * engine runs here, so the stage's file list is read from the Dockerfile itself. Without
 * oclif.manifest.json, `docker run svc --help` printed no command's help.
 */

const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  files: string[];
  scripts: Record<string, string>;
};

/** The instructions of the stage that starts at the last FROM, continuation lines joined. */
function lastStage(): string[] {
  const lines = dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const from = lines.findLastIndex((l) => /^FROM\s/i.test(l));
  return lines.slice(from);
}

/** What a COPY --from=build puts in /app, by the path it has in the build stage's /app. */
function copiedFromBuild(stage: string[]): string[] {
  return stage
    .filter((l) => /^COPY\s+--from=build\s/i.test(l))
    .flatMap((l) => {
      const words = l.split(/\s+/).filter((w) => !w.startsWith('--'));
      return words.slice(1, -1).map((source) => source.replace(/^\/app\//, ''));
    });
}

test("the default image's last stage copies every file the npm package ships, the commands' help included", (t) => {
  const stage = lastStage();
  t.regex(stage[0]!, /^FROM node:24-slim$/i, 'the default image is the last stage');
  t.true(stage.some((l) => /^WORKDIR \/app$/i.test(l)));
  const copied = copiedFromBuild(stage);
  for (const file of pkg.files) t.true(copied.includes(file), `${file} is in the image`);
  t.true(copied.includes('oclif.manifest.json'), 'the help manifest');
  t.true(copied.includes('package.json'));
});

test('the build stage makes the help manifest that the last stage copies', (t) => {
  t.regex(dockerfile, /^RUN npm ci\b/m, 'npm ci runs the prepare script');
  t.regex(pkg.scripts.prepare!, /npm run build/);
  t.regex(pkg.scripts.build!, /generate-manifest/);
});
