import { spawn } from 'node:child_process';
import { globSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { startCluster, type Cluster } from './helpers/pg-cluster.js';
import { ROOT } from './helpers/process.js';

/**
 * `npm test`'s test runner. `node --import=tsx test/run.ts` runs every test file on LMDB and the
 * route suites of POSTGRES_PASS a second time on PostgreSQL, in one ava run; `--postgres` runs only
 * that second pass (`npm run test:postgres`); file patterns run those files (on PostgreSQL when
 * SVC_TEST_STORE=postgres is set); arguments with flags (`--match`, `-v`, a `file:line`) pass to
 * ava unchanged.
 *
 * ava has no global setup, so this starts one private PostgreSQL cluster (helpers/pg-cluster.ts)
 * for the whole run, hands its URL to ava in SVC_TEST_PG_URL (each test file makes its own
 * database in it: helpers/postgres.ts), and stops it whatever happens: ava's exit, a crash here,
 * SIGINT or SIGTERM.
 *
 * Test files share workers. Most of a small test file's cost is its worker loading the
 * application's modules (about 1.5 s of CPU: test/helpers/ts-loader.mjs), so the files of one
 * folder are imported together by a group file written to `.test-groups/` for the run, which ava runs in one worker:
 * their tests register with that worker's runner as if they were one file. A group of the
 * PostgreSQL pass sets SVC_TEST_STORE=postgres for its worker. Files run in a worker of their own
 * when their folder is about spawned processes (cli, multi, clients: each file's concurrency is
 * tuned for itself), when they declare per-test hooks (`test.beforeEach`/`afterEach` would run for
 * the whole group) or when they await at their top level (ava starts a worker's tests on the tick
 * after the first declaration; sibling modules evaluate while one awaits, so that file could no
 * longer declare its tests). A failing test is named by its group (`gateway-2 › title`); its stack
 * names the file, and the group file lists its members. The longest workers start first.
 */

/** The suites that read and write the store the most, run again on PostgreSQL. */
const POSTGRES_PASS = [
  'test/gate/**/*.test.ts',
  'test/people/**/*.test.ts',
  'test/killswitch/**/*.test.ts',
  'test/approvals/**/*.test.ts',
  'test/http/{token-scopes,auth}.test.ts',
  'test/keys/admin.test.ts',
  'test/service-tokens/admin.test.ts',
  'test/plans/seats.test.ts',
  'test/gateway/{budgets,limits,records,refusals,chat,responses,embeddings,cache}.test.ts',
];
const GROUPS = join(ROOT, '.test-groups');
/** Where the run keeps V8's compile cache (NODE_COMPILE_CACHE), beside npm's own caches. */
const COMPILE_CACHE = join(ROOT, 'node_modules', '.cache', 'svc-test-compile');
/**
 * Folders whose files run alone: each spawns processes with a concurrency tuned for itself (the
 * real clients' files each start several `svc serve` in their hooks, which together outlast ava's
 * timeout before any test ends when they share a worker).
 */
const ALONE_FOLDERS = new Set(['cli', 'multi', 'clients']);
/**
 * How much longer than its size says a file of these folders takes (they spawn processes, kill
 * them, or drive a browser), measured on a quiet machine: seconds per KB of source, against about
 * 0.4 for a file of route tests.
 */
const SLOW_FOLDERS = new Map([
  ['multi', 20],
  ['cli', 6],
  ['browser', 3],
  ['conformance', 3],
  ['durability', 3],
  ['fuzz', 30],
  ['clients', 10],
]);
/** At most this many files share a worker, so that the workers stay busy until the end. */
const GROUP_SIZE = 8;
const PER_TEST_HOOK = /\btest\.(?:beforeEach|afterEach)\b/;
const TOP_LEVEL_AWAIT = /^(?:(?:export )?(?:const|let|var) [^=\n]+= )?[\w.(]*\bawait\b/m;

interface Worker {
  /** The file ava runs: a test file, or a group file importing several. */
  file: string;
  /** How long it is expected to take, to start the longest first: its sources' size, weighed by SLOW_FOLDERS. */
  weight: number;
}

const expand = (patterns: string[]) => [...new Set(patterns.flatMap((p) => globSync(p, { cwd: ROOT })))].sort();
const folderOf = (file: string) => file.split('/')[1] ?? '';
const weightOf = (files: string[]) =>
  files.reduce((sum, f) => sum + statSync(join(ROOT, f)).size * (SLOW_FOLDERS.get(folderOf(f)) ?? 1), 0);

/** The workers for these test files, their groups written to `.test-groups/`. */
function workers(files: string[], store: 'lmdb' | 'postgres'): Worker[] {
  const out: Worker[] = [];
  const byFolder = new Map<string, string[]>();
  for (const file of files) {
    const folder = folderOf(file);
    const source = readFileSync(join(ROOT, file), 'utf8');
    if (store === 'lmdb' && (ALONE_FOLDERS.has(folder) || PER_TEST_HOOK.test(source) || TOP_LEVEL_AWAIT.test(source)))
      out.push({ file, weight: weightOf([file]) });
    else byFolder.set(folder, [...(byFolder.get(folder) ?? []), file]);
  }
  const prefix = store === 'postgres' ? 'postgres-' : '';
  for (const [folder, members] of byFolder) {
    if (members.length === 1 && store === 'lmdb') {
      out.push({ file: members[0]!, weight: weightOf(members) });
      continue;
    }
    const count = Math.ceil(members.length / GROUP_SIZE);
    for (let i = 0; i < count; i++) {
      const part = members.filter((_, j) => j % count === i);
      const name = join(GROUPS, `${prefix}${folder}${count === 1 ? '' : `-${i + 1}`}.test.ts`);
      writeFileSync(
        name,
        `// Written by test/run.ts for this run: these test files share one ava worker${store === 'postgres' ? ', on PostgreSQL' : ''}.\n` +
          part.map((f) => `import '${relative(GROUPS, join(ROOT, f))}';\n`).join('') +
          (store === 'postgres' ? "process.env.SVC_TEST_STORE = 'postgres';\n" : ''),
      );
      out.push({ file: relative(ROOT, name), weight: weightOf(part) });
    }
  }
  return out;
}

/** ava's arguments and the order of its files (longest first) for this runner's arguments. */
function plan(args: string[]): { avaArgs: string[]; order: string[] } {
  if (args.some((a) => a !== '--postgres' && (a.startsWith('-') || a.includes(':'))))
    return { avaArgs: args, order: [] };
  const postgresOnly = args.includes('--postgres');
  const patterns = args.filter((a) => a !== '--postgres');
  rmSync(GROUPS, { recursive: true, force: true });
  mkdirSync(GROUPS);
  let planned: Worker[];
  if (postgresOnly) planned = workers(expand(patterns.length > 0 ? patterns : POSTGRES_PASS), 'postgres');
  else if (patterns.length > 0) {
    const files = expand(patterns);
    if (files.length < 2) return { avaArgs: patterns, order: [] };
    planned = workers(files, process.env.SVC_TEST_STORE === 'postgres' ? 'postgres' : 'lmdb');
  } else planned = [...workers(expand(['test/**/*.test.ts']), 'lmdb'), ...workers(expand(POSTGRES_PASS), 'postgres')];
  planned.sort((a, b) => b.weight - a.weight);
  process.stderr.write(`${planned.length} ava workers\n`);
  const order = planned.map((w) => w.file);
  return { avaArgs: order, order };
}

let cluster: Cluster | undefined;
const stop = () => {
  cluster?.stop();
  cluster = undefined;
  rmSync(GROUPS, { recursive: true, force: true });
};
process.on('exit', stop);

const { avaArgs, order } = plan(process.argv.slice(2));
if (!process.env.SVC_TEST_PG_URL) {
  cluster = await startCluster();
  process.stderr.write(`test PostgreSQL cluster on 127.0.0.1:${cluster.port}\n`);
}
const child = spawn(process.execPath, [join(ROOT, 'node_modules', 'ava', 'entrypoints', 'cli.mjs'), ...avaArgs], {
  stdio: 'inherit',
  env: {
    ...process.env,
    SVC_TEST_GROUPS: '1',
    // The workers and the svc processes they spawn load the same thousand modules: V8's compiled
    // code is kept on disk and shared (about a third of a worker's load time).
    NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? COMPILE_CACHE,
    SVC_TEST_ORDER: JSON.stringify(order),
    ...(cluster ? { SVC_TEST_PG_URL: cluster.url } : {}),
  },
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  // The terminal sends SIGINT to ava as well; a SIGTERM is passed on. Either way the cluster is
  // stopped once ava has exited.
  process.on(signal, () => child.kill(signal));
}
child.on('exit', (code, signal) => {
  stop();
  process.exit(code ?? (signal ? 1 : 0));
});
