/**
 * Benchmark: the single executable against the npm-installed svc, as an operator meets them.
 *
 * - size: the binary's bytes (it holds Node itself), beside what the npm svc needs on disk
 *   (node_modules of the production dependencies, dist/, and Node, which it does not hold).
 * - start: wall time of `svc --version` (loading every command; nothing opened), and of
 *   `svc ledger verify` on a small store (the store opened: for the binary, its native code
 *   checked file by file in its cache before it loads). Both builds run from this machine's disk
 *   cache, alternating, after one warm-up each (the binary's first run writes its cache folder);
 *   the median of each is reported.
 *
 * Goal: the binary starts within 20% of the npm svc (binary / npm <= 1.2 for each command).
 * Exits 1 when a goal is missed. Expects dist/bin/svc-<platform>-<arch> (npm run bench builds it).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, cleanEnv, ROOT } from '../helpers/process.js';
import { goalsTable, type Goal } from './report.js';

const ROUNDS = 15;
const MAX_RATIO = 1.2;
const binary = join(ROOT, 'dist', 'bin', `svc-${process.platform}-${process.arch}`);
if (!existsSync(binary)) {
  console.error(`start: ${binary} is missing: npm run build:binary makes it`);
  process.exit(1);
}

const work = await mkdtemp(join(tmpdir(), 'svc-bench-start-'));
const env = cleanEnv({ HOME: join(work, 'home'), SVC_LOG_LEVEL: 'warn' });
const builds = {
  npm: (args: string[]) => [process.execPath, BIN, ...args],
  binary: (args: string[]) => [binary, ...args],
} as const;
type Build = keyof typeof builds;

function runOnce(build: Build, args: string[]): number {
  const [command, ...rest] = builds[build](args);
  const started = process.hrtime.bigint();
  const result = spawnSync(command!, rest, { cwd: work, env, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.status !== 0) throw new Error(`${build} svc ${args.join(' ')} exited ${result.status}:\n${result.stderr}`);
  return ms;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

function compare(label: string, args: string[]): { label: string; npm: number; binary: number } {
  runOnce('npm', args);
  runOnce('binary', args);
  const times: Record<Build, number[]> = { npm: [], binary: [] };
  for (let round = 0; round < ROUNDS; round++) {
    // Alternating, and each pair in either order, so neither build always runs on a warmer machine.
    const order: Build[] = round % 2 === 0 ? ['npm', 'binary'] : ['binary', 'npm'];
    for (const build of order) times[build].push(runOnce(build, args));
  }
  return { label, npm: median(times.npm), binary: median(times.binary) };
}

function bytesUnder(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, entry) => sum + bytesUnder(join(path, entry)), 0);
}

try {
  const dataDir = join(work, 'data');
  runOnce('npm', [
    'init',
    '--data-dir',
    dataDir,
    '--workspace',
    'Bench',
    '--owner-email',
    'bench@example.com',
    '--owner-password',
    'a long benchmark passphrase',
  ]);
  const rows = [
    compare('svc --version', ['--version']),
    compare('svc ledger verify (store opened)', ['ledger', 'verify', '--data-dir', dataDir]),
  ];

  const production = spawnSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: ROOT, encoding: 'utf8' });
  const modules = production.stdout
    .split('\n')
    .filter((p) => p.includes(`${join(ROOT, 'node_modules')}/`))
    .filter((p, _, all) => !all.some((other) => other !== p && p.startsWith(`${other}/node_modules/`)));
  const npmBytes = modules.reduce((sum, p) => sum + bytesUnder(p), 0) + bytesUnder(join(ROOT, 'dist', 'src'));

  console.log(`\nsingle executable: ${binary}`);
  console.log(`  size ${(statSync(binary).size / 1e6).toFixed(1)} MB, Node ${process.version} included`);
  console.log(
    `  npm svc: ${(npmBytes / 1e6).toFixed(1)} MB of production node_modules and dist/src, plus Node (${(statSync(process.execPath).size / 1e6).toFixed(1)} MB)`,
  );
  console.log(`  machine load average ${loadavg()[0]!.toFixed(2)} (timings on a busy machine are slower for both)\n`);
  console.log('command                           npm svc   binary   binary / npm');
  for (const row of rows) {
    console.log(
      `${row.label.padEnd(32)}  ${row.npm.toFixed(0).padStart(5)} ms  ${row.binary.toFixed(0).padStart(5)} ms   ${(row.binary / row.npm).toFixed(2)}`,
    );
  }
  const goals: Goal[] = rows.map((row) => ({
    benchmark: `start: ${row.label}`,
    measured: `${(row.binary / row.npm).toFixed(2)} of the npm svc's time`,
    goal: `<= ${MAX_RATIO.toFixed(2)}`,
    met: row.binary / row.npm <= MAX_RATIO,
  }));
  console.log(`\n${goalsTable(goals)}`);
  process.exitCode = goals.every((g) => g.met) ? 0 : 1;
} finally {
  await rm(work, { recursive: true, force: true });
}
