#!/usr/bin/env node
// npm start: runs `npm run build` only when a source changed since the last build, so a restart
// takes the time of the start alone (the build is 15 to 30 s). The last build is dated by
// oclif.manifest.json, the file the build writes last (and removes first when it runs again): a
// build that failed half-way leaves it older than the sources, so the next start builds again.
// Run from the package folder (npm runs scripts there).
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = process.cwd();
const SOURCES = ['src', 'commands', 'bin', 'config', 'scripts', 'package.json', 'package-lock.json', 'tsconfig.json'];
// Written by the build itself (the command index, the console's page script).
const GENERATED = [join('src', 'cli', 'generated'), join('src', 'console', 'generated')];
const BUILT = 'oclif.manifest.json';

/** The newest modification time under `path` (0 when it does not exist), and the file that has it. */
function newest(path) {
  let stats;
  try {
    stats = statSync(join(root, path));
  } catch {
    return { time: 0, file: path };
  }
  if (!stats.isDirectory()) return { time: stats.mtimeMs, file: path };
  if (GENERATED.includes(path)) return { time: 0, file: path };
  let best = { time: stats.mtimeMs, file: path };
  for (const name of readdirSync(join(root, path))) {
    const found = newest(join(path, name));
    if (found.time > best.time) best = found;
  }
  return best;
}

const built = newest(BUILT).time;
const changed = SOURCES.map(newest).reduce((a, b) => (b.time > a.time ? b : a));
if (built > 0 && changed.time <= built) {
  console.error('build: up to date');
  process.exit(0);
}
console.error(built === 0 ? 'build: no build yet' : `build: ${changed.file} changed since the last build`);
const npm = process.env.npm_execpath
  ? spawnSync(process.execPath, [process.env.npm_execpath, 'run', 'build'], { stdio: 'inherit' })
  : spawnSync('npm', ['run', 'build'], { stdio: 'inherit' });
process.exit(npm.status ?? 1);
