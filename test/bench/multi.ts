/**
 * Benchmark: past one machine (issues 17 and 38). POST /v1/actions/authorize (an allowed payment:
 * a receipt signed, the action and a ledger record stored, durable before the answer) on
 *   - LMDB, one `svc serve` (the default),
 *   - LMDB, `svc serve --workers 2` (one file, one port, two processes),
 *   - PostgreSQL, one instance,
 *   - PostgreSQL, two instances on one database, the load split between them,
 * all started first and then measured in alternating rounds (one round of each configuration and
 * of a bare hapi echo of the same body, again and again), so that a change in the shared machine's
 * load falls on every configuration alike. Each row: req/s, p50/p99, the server CPU per decision
 * (user + system time of every svc process, primary and workers included, over the decisions
 * answered) and PostgreSQL's (every process of the private cluster); on PostgreSQL the statements
 * and round trips per decision (svc's own `svc_store_statements_total` and
 * `svc_store_round_trips_total`), and the serialization failures and deadlocks per 1,000 decisions
 * as PostgreSQL's own log counts them (the cluster runs with its log in a file, every ERROR in
 * it); and the ledger's integration lag p99 where the server exports one (a histogram whose name
 * holds `integration`). Reports; never fails the build on a goal.
 * `node --import=tsx test/bench/multi.ts [lmdb|postgres|...]`: only the configurations named.
 */
import autocannon from 'autocannon';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startCluster, type Cluster } from '../helpers/pg-cluster.js';
import { BIN, cleanEnv } from '../helpers/process.js';
import { startChild, type Child } from './children.js';
import { BENCH_PAYMENT, gateFixture, type ServeBoot } from './gate-fixture.js';
import { processCpuMs } from './load.js';
import { goalsTable, type Goal } from './report.js';

const CONNECTIONS = 32;
const WARMUP_SECONDS = 1;
const ROUND_SECONDS = 3;
const ROUNDS = 3;
const UNLIMITED = '100000000';
const TOKEN = 'bench-metrics-token-multi';

/** Every process of a server (or of the cluster): the parent and its children. */
function processTree(pid: number): number[] {
  const out = [pid];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(entry));
    } catch {
      /* gone */
    }
  }
  return out;
}

/** User + system CPU milliseconds of the processes. */
const cpuMs = (pids: number[]): number => pids.reduce((ms, pid) => ms + processCpuMs(pid), 0);

/** A counter's value summed over its series, from a Prometheus text exposition. */
function counterOf(text: string, name: string): number {
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name} `) || line.startsWith(`${name}{`))
    .reduce((n, line) => n + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

/** Cumulative buckets (le -> count) of the first histogram whose name holds `integration`. */
function integrationBuckets(text: string): Map<number, number> | null {
  const out = new Map<number, number>();
  let name: string | undefined;
  for (const line of text.split('\n')) {
    const m = /^(\w*integration\w*)_bucket\{(?:[^}]*,)?le="([^"]+)"[^}]*\} (\S+)$/.exec(line);
    if (!m || (name !== undefined && m[1] !== name)) continue;
    name = m[1];
    const le = m[2] === '+Inf' ? Infinity : Number(m[2]);
    out.set(le, (out.get(le) ?? 0) + Number(m[3]));
  }
  return name === undefined ? null : out;
}

/** The 99th percentile (a bucket's upper bound) of the observations between two scrapes. */
function p99Between(before: Map<number, number> | null, after: Map<number, number> | null): number | null {
  if (!after) return null;
  const les = [...after.keys()].sort((a, b) => a - b);
  const count = (le: number) => (after.get(le) ?? 0) - (before?.get(le) ?? 0);
  const total = count(Infinity);
  if (total <= 0) return null;
  return les.find((le) => count(le) >= 0.99 * total) ?? null;
}

interface Config {
  name: string;
  servers: Array<Child<ServeBoot>>;
  /** The store's database, for PostgreSQL configurations. */
  postgres: boolean;
  urls: string[];
  key: string;
}

interface Round {
  total: number;
  duration: number;
  p50: number;
  p99: number;
  cpu: number;
  pgCpu: number;
  statements: number;
  roundTrips: number;
  conflicts: number;
  retries: number;
  lagP99: number | null;
  failed: number;
}

interface Row {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  cpuMsPerDecision: number | null;
  pgCpuMsPerDecision: number | null;
  statements: number | null;
  roundTrips: number | null;
  conflictsPer1000: number | null;
  retriesPer1000: number | null;
  lagP99: number | null;
  failed: number;
}

let cluster: Cluster | undefined;
const logSize = () => (cluster ? readFileSync(join(cluster.dir, 'log')).length : 0);
/** Serialization failures and deadlocks in the cluster's log from byte `from` on. */
const conflictsSince = (from: number) =>
  cluster
    ? readFileSync(join(cluster.dir, 'log'))
        .subarray(from)
        .toString()
        .split('\n')
        .filter((line) => /could not serialize access|deadlock detected/.test(line)).length
    : 0;
const clusterPids = (): number[] => {
  if (!cluster) return [];
  const pid = Number(readFileSync(join(cluster.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
  return processTree(pid);
};

async function scrape(servers: Array<Child<ServeBoot>>): Promise<string> {
  const texts = await Promise.all(
    servers.map(async (s) =>
      (await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text(),
    ),
  );
  return texts.join('\n');
}

/** One round against every URL at once (connections split evenly). */
async function round(urls: string[], headers: Record<string, string>, body: string, seconds: number) {
  const results = await Promise.all(
    urls.map((url) =>
      autocannon({
        url,
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body,
        connections: Math.max(1, Math.floor(CONNECTIONS / urls.length)),
        duration: seconds,
      }),
    ),
  );
  return {
    total: results.reduce((n, r) => n + r.requests.total, 0),
    duration: Math.max(...results.map((r) => r.duration)),
    p50: Math.max(...results.map((r) => r.latency.p50)),
    p99: Math.max(...results.map((r) => r.latency.p99)),
    failed: results.reduce((n, r) => n + r.non2xx + r.errors + r.timeouts, 0),
  };
}

async function measureRound(c: Config, seconds: number): Promise<Round> {
  const pids = c.servers.flatMap((s) => processTree(s.child.pid!));
  const pgPids = c.postgres ? clusterPids() : [];
  const [cpu0, pg0, log0] = [cpuMs(pids), cpuMs(pgPids), logSize()];
  const m0 = c.postgres ? await scrape(c.servers) : '';
  const r = await round(c.urls, { authorization: `Bearer ${c.key}` }, JSON.stringify(BENCH_PAYMENT), seconds);
  const [cpu, pgCpu] = [cpuMs(pids) - cpu0, cpuMs(pgPids) - pg0];
  const m1 = c.postgres ? await scrape(c.servers) : '';
  const diff = (name: string) => counterOf(m1, name) - counterOf(m0, name);
  return {
    ...r,
    cpu,
    pgCpu,
    statements: diff('svc_store_statements_total'),
    roundTrips: diff('svc_store_round_trips_total'),
    conflicts: conflictsSince(log0),
    retries: diff('svc_store_write_retries_total'),
    lagP99: c.postgres ? p99Between(integrationBuckets(m0), integrationBuckets(m1)) : null,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function rowOf(name: string, rs: Round[], postgres: boolean, withCpu: boolean): Row {
  const total = rs.reduce((n, r) => n + r.total, 0);
  const sum = (f: (r: Round) => number) => rs.reduce((n, r) => n + f(r), 0);
  const per = (f: (r: Round) => number) => (postgres && total > 0 ? sum(f) / total : null);
  const lags = rs.map((r) => r.lagP99).filter((x): x is number => x !== null);
  return {
    name,
    rps: total / sum((r) => r.duration),
    p50: median(rs.map((r) => r.p50)),
    p99: median(rs.map((r) => r.p99)),
    cpuMsPerDecision: withCpu ? sum((r) => r.cpu) / total : null,
    pgCpuMsPerDecision: per((r) => r.pgCpu),
    statements: per((r) => r.statements),
    roundTrips: per((r) => r.roundTrips),
    conflictsPer1000: postgres ? (1000 * sum((r) => r.conflicts)) / total : null,
    retriesPer1000: postgres ? (1000 * sum((r) => r.retries)) / total : null,
    lagP99: lags.length === 0 ? null : Math.max(...lags),
    failed: sum((r) => r.failed),
  };
}

const env = () =>
  cleanEnv({
    SVC_LOG_LEVEL: 'info',
    SVC_GATE_RATE_PER_MINUTE: UNLIMITED,
    SVC_PUBLIC_RATE_PER_MINUTE: UNLIMITED,
    SVC_METRICS_TOKEN: TOKEN,
  });

async function serve(dataDir: string, extra: string[]): Promise<Child<ServeBoot>> {
  return startChild<ServeBoot>([BIN, 'serve', '--json', '--data-dir', dataDir, '--port', '0', ...extra], env());
}

/** A fresh database in the benchmark's own cluster (started on first use, its log in a file). */
async function database(): Promise<string> {
  cluster ??= await startCluster();
  const name = `svc_bench_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return cluster.url.replace(/\/postgres$/, `/${name}`);
}

const fmt = (x: number | null, digits = 2) => (x === null ? '' : x.toFixed(digits));
const pad = (text: string, n: number) => text.padStart(n);

function printHeader(): void {
  console.log(
    `${'configuration'.padEnd(28)} ${pad('req/s', 6)} ${pad('p50 ms', 6)} ${pad('p99 ms', 6)} ${pad('svc CPU ms', 10)} ${pad('PG CPU ms', 9)} ${pad('stmts', 6)} ${pad('trips', 5)} ${pad('confl/1k', 8)} ${pad('retry/1k', 8)} ${pad('lag p99 s', 9)} ${pad('failed', 6)}`,
  );
}

function printRow(r: Row): void {
  console.log(
    `${r.name.padEnd(28)} ${pad(r.rps.toFixed(0), 6)} ${pad(String(r.p50), 6)} ${pad(String(r.p99), 6)} ${pad(fmt(r.cpuMsPerDecision), 10)} ${pad(fmt(r.pgCpuMsPerDecision), 9)} ${pad(fmt(r.statements, 1), 6)} ${pad(fmt(r.roundTrips, 1), 5)} ${pad(fmt(r.conflictsPer1000, 1), 8)} ${pad(fmt(r.retriesPer1000, 1), 8)} ${pad(fmt(r.lagP99), 9)} ${pad(String(r.failed), 6)}`,
  );
}

async function main(): Promise<void> {
  const bareScript = fileURLToPath(new URL('./bare-server.ts', import.meta.url));
  console.log(
    `authorize past one machine: autocannon ${CONNECTIONS} connections (split across instances), ${WARMUP_SECONDS} s warm-up + ${ROUNDS} rounds x ${ROUND_SECONDS} s, the configurations and bare hapi alternating; Node ${process.version}`,
  );
  console.log(`machine: ${availableParallelism()} CPUs, load average ${loadavg()[0]!.toFixed(2)} at start\n`);
  const plans: Array<{ name: string; postgres: boolean; start(dataDir: string): Promise<Array<Child<ServeBoot>>> }> = [
    { name: 'lmdb, 1 process', postgres: false, start: async (d) => [await serve(d, [])] },
    { name: 'lmdb, --workers 2', postgres: false, start: async (d) => [await serve(d, ['--workers', '2'])] },
    {
      name: 'postgres, 1 instance',
      postgres: true,
      start: async (d) => [await serve(d, ['--store', await database()])],
    },
    {
      name: 'postgres, 2 instances',
      postgres: true,
      start: async (d) => {
        const url = await database();
        const a = await serve(d, ['--store', url]);
        return [a, await serve(d, ['--store', url])];
      },
    },
  ];
  // `multi.ts lmdb` (or any words): only the configurations whose name holds one of them.
  const only = process.argv.slice(2);
  const configs: Config[] = [];
  const dirs: string[] = [];
  let bare: Child<{ listening: string }> | undefined;
  try {
    let answer = '';
    for (const plan of plans) {
      if (only.length > 0 && !only.some((word) => plan.name.includes(word))) continue;
      const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-multi-'));
      dirs.push(dataDir);
      const servers = await plan.start(dataDir);
      const fx = await gateFixture(servers[0]!);
      answer = fx.authorizeAnswer;
      configs.push({
        name: plan.name,
        servers,
        postgres: plan.postgres,
        urls: servers.map((s) => `${s.url}/v1/actions/authorize`),
        key: fx.key,
      });
    }
    bare = await startChild(['--import=tsx', bareScript, answer], cleanEnv());
    const bareUrl = `${bare.url}/bare/echo?size=${Buffer.byteLength(answer)}`;
    const bareConfig = { name: 'bare hapi', servers: [], postgres: false, urls: [bareUrl], key: '' } as Config;
    for (const c of [...configs, bareConfig]) await measureRound(c, WARMUP_SECONDS);
    const rounds = new Map<string, Round[]>([...configs, bareConfig].map((c) => [c.name, []]));
    for (let i = 0; i < ROUNDS; i++) {
      for (const c of [...configs, bareConfig]) rounds.get(c.name)!.push(await measureRound(c, ROUND_SECONDS));
    }
    printHeader();
    const rows: Row[] = [];
    for (const c of configs) rows.push(rowOf(c.name, rounds.get(c.name)!, c.postgres, true));
    const bareRow = rowOf('bare hapi (same body)', rounds.get('bare hapi')!, false, false);
    for (const r of [...rows, bareRow]) printRow(r);
    console.log(`\nload average ${loadavg()[0]!.toFixed(2)} at the end\n`);
    console.log(goalsTable(goalsOf(rows, bareRow)));
  } catch (err) {
    console.log(`not measured: ${(err as Error).message}`);
    process.exitCode = 1;
  } finally {
    for (const c of configs) for (const s of c.servers) await s.stop();
    await bare?.stop();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
    cluster?.stop();
  }
}

/** The goals on this machine, each against the configuration it compares with. */
function goalsOf(rows: Row[], bare: Row): Goal[] {
  const by = (name: string) => rows.find((r) => r.name === name);
  const goals: Goal[] = [];
  const figure = (r: Row): Partial<Goal> => ({
    svc: `${r.rps.toFixed(0)} req/s (p99 ${r.p99} ms)`,
    baseline: `${bare.rps.toFixed(0)} req/s`,
    ratio: r.rps / bare.rps,
    ...(r.cpuMsPerDecision === null ? {} : { cpuMicros: r.cpuMsPerDecision * 1000 }),
  });
  const ratio = (name: string, of: string, min: number) => {
    const [r, base] = [by(name), by(of)];
    if (!r || !base) return;
    goals.push({
      benchmark: `authorize, ${name} vs ${of}`,
      measured: `${(r.rps / base.rps).toFixed(2)}x (${r.rps.toFixed(0)} vs ${base.rps.toFixed(0)} req/s)`,
      goal: `>= ${min.toFixed(1)}x`,
      met: r.rps / base.rps >= min,
      ...figure(r),
    });
  };
  ratio('postgres, 1 instance', 'lmdb, 1 process', 0.5);
  ratio('postgres, 2 instances', 'postgres, 1 instance', 1.0);
  ratio('lmdb, --workers 2', 'lmdb, 1 process', 1.0);
  for (const r of rows.filter((row) => row.roundTrips !== null)) {
    goals.push({
      benchmark: `authorize, ${r.name}: round trips per decision`,
      measured: `${fmt(r.roundTrips, 1)} (${fmt(r.statements, 1)} statements)`,
      goal: '<= 6',
      met: (r.roundTrips ?? Infinity) <= 6,
    });
  }
  for (const r of rows.filter((row) => row.conflictsPer1000 !== null)) {
    goals.push({
      benchmark: `authorize, ${r.name}: conflicts per 1,000 (PostgreSQL's log)`,
      measured: fmt(r.conflictsPer1000, 1),
      goal: '0',
      met: r.conflictsPer1000 === 0,
    });
  }
  for (const r of rows.filter((row) => row.lagP99 !== null)) {
    goals.push({
      benchmark: `authorize, ${r.name}: integration lag p99`,
      measured: `${fmt(r.lagP99)} s`,
      goal: '<= 1.5 s',
      met: (r.lagP99 ?? Infinity) <= 1.5,
    });
  }
  return goals;
}

await main();
process.exit();
