/**
 * Benchmark: past one machine (issue 17). POST /v1/actions/authorize (an allowed payment: a
 * receipt signed, the action and a ledger record stored, durable before the answer) on
 *   - LMDB, one `svc serve` (the default),
 *   - LMDB, `svc serve --workers 2` (one file, one port, two processes),
 *   - PostgreSQL, one instance,
 *   - PostgreSQL, two instances on one database, the load split between them,
 * each beside a bare hapi echo of the same body measured in the same run (alternating rounds), with
 * p50/p99 and the server CPU per request (user + system time of every server process, primary and
 * workers included, over the requests answered). Reports; never fails the build.
 * `node --import=tsx test/bench/multi.ts [lmdb|postgres]` (PostgreSQL: a private cluster is started, as in tests).
 */
import autocannon from 'autocannon';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freshDatabase } from '../helpers/postgres.js';
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

interface Row {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  cpuMsPerRequest: number | null;
  failed: number;
}

/** Every process of a server: the primary and, with --workers, its children. */
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

interface Target {
  urls: string[];
  headers: Record<string, string>;
  body: string;
  pids: number[];
}

/** One round against every URL at once (connections split evenly); CPU of `pids` over the round. */
async function round(target: Target, seconds: number) {
  const before = cpuMs(target.pids);
  const results = await Promise.all(
    target.urls.map((url) =>
      autocannon({
        url,
        method: 'POST',
        headers: { ...target.headers, 'content-type': 'application/json' },
        body: target.body,
        connections: Math.max(1, Math.floor(CONNECTIONS / target.urls.length)),
        duration: seconds,
      }),
    ),
  );
  const cpu = cpuMs(target.pids) - before;
  const total = results.reduce((n, r) => n + r.requests.total, 0);
  const failed = results.reduce((n, r) => n + r.non2xx + r.errors + r.timeouts, 0);
  return {
    total,
    duration: Math.max(...results.map((r) => r.duration)),
    p50: Math.max(...results.map((r) => r.latency.p50)),
    p99: Math.max(...results.map((r) => r.latency.p99)),
    cpu,
    failed,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function measure(name: string, product: Target, bare: Target): Promise<[Row, Row]> {
  await round(product, WARMUP_SECONDS);
  await round(bare, WARMUP_SECONDS);
  const p: Array<Awaited<ReturnType<typeof round>>> = [];
  const b: Array<Awaited<ReturnType<typeof round>>> = [];
  for (let i = 0; i < ROUNDS; i++) {
    p.push(await round(product, ROUND_SECONDS));
    b.push(await round(bare, ROUND_SECONDS));
  }
  const row = (label: string, rs: typeof p, withCpu: boolean): Row => {
    const total = rs.reduce((n, r) => n + r.total, 0);
    return {
      name: label,
      rps: total / rs.reduce((n, r) => n + r.duration, 0),
      p50: median(rs.map((r) => r.p50)),
      p99: median(rs.map((r) => r.p99)),
      cpuMsPerRequest: withCpu ? rs.reduce((n, r) => n + r.cpu, 0) / total : null,
      failed: rs.reduce((n, r) => n + r.failed, 0),
    };
  };
  return [row(`${name} (svc)`, p, true), row(`${name} (bare hapi)`, b, false)];
}

const env = () =>
  cleanEnv({ SVC_LOG_LEVEL: 'info', SVC_GATE_RATE_PER_MINUTE: UNLIMITED, SVC_PUBLIC_RATE_PER_MINUTE: UNLIMITED });

async function serve(dataDir: string, extra: string[]): Promise<Child<ServeBoot>> {
  return startChild<ServeBoot>([BIN, 'serve', '--json', '--data-dir', dataDir, '--port', '0', ...extra], env());
}

async function main(): Promise<void> {
  const bareScript = fileURLToPath(new URL('./bare-server.ts', import.meta.url));
  console.log(
    `authorize past one machine: autocannon ${CONNECTIONS} connections (split across instances), ${WARMUP_SECONDS} s warm-up + ${ROUNDS} x ${ROUND_SECONDS} s alternating with bare hapi; Node ${process.version}`,
  );
  console.log(`machine: ${availableParallelism()} CPUs, load average ${loadavg()[0]!.toFixed(2)} at start\n`);
  const rows: Row[] = [];
  const pad = (text: string, n: number) => text.padStart(n);
  console.log(
    `${'configuration'.padEnd(40)} ${pad('req/s', 7)} ${pad('p50 ms', 7)} ${pad('p99 ms', 7)} ${pad('CPU ms/req', 10)} ${pad('failed', 6)}`,
  );
  /** Each configuration's two rows and its ratio, printed as soon as it is measured. */
  const print = (p: Row, b: Row) => {
    for (const r of [p, b]) {
      console.log(
        `${r.name.padEnd(40)} ${pad(r.rps.toFixed(0), 7)} ${pad(String(r.p50), 7)} ${pad(String(r.p99), 7)} ${pad(r.cpuMsPerRequest === null ? '' : r.cpuMsPerRequest.toFixed(2), 10)} ${pad(String(r.failed), 6)}`,
      );
    }
    console.log(`${''.padEnd(40)} ratio to bare: ${(p.rps / b.rps).toFixed(2)}`);
  };
  const configs: Array<{ name: string; start(dataDir: string): Promise<Array<Child<ServeBoot>>> }> = [
    { name: 'lmdb, 1 instance', start: async (d) => [await serve(d, [])] },
    { name: 'lmdb, --workers 2', start: async (d) => [await serve(d, ['--workers', '2'])] },
    {
      name: 'postgres, 1 instance',
      start: async (d) => [await serve(d, ['--store', (await freshDatabase()).url])],
    },
    {
      name: 'postgres, 2 instances',
      start: async (d) => {
        const url = (await freshDatabase()).url;
        const a = await serve(d, ['--store', url]);
        return [a, await serve(d, ['--store', url])];
      },
    },
  ];
  // `multi.ts lmdb` (or any words): only the configurations whose name holds one of them.
  const only = process.argv.slice(2);
  for (const config of configs) {
    if (only.length > 0 && !only.some((word) => config.name.includes(word))) continue;
    const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-multi-'));
    let servers: Array<Child<ServeBoot>> = [];
    let bare: Child<{ listening: string }> | undefined;
    try {
      servers = await config.start(dataDir);
      const first = servers[0]!;
      const fx = await gateFixture(first);
      bare = await startChild(['--import=tsx', bareScript, fx.authorizeAnswer], cleanEnv());
      const body = JSON.stringify(BENCH_PAYMENT);
      const product: Target = {
        urls: servers.map((s) => `${s.url}/v1/actions/authorize`),
        headers: { authorization: `Bearer ${fx.key}` },
        body,
        pids: servers.flatMap((s) => processTree(s.child.pid!)),
      };
      const baseline: Target = {
        urls: [`${bare.url}/bare/echo?size=${Buffer.byteLength(fx.authorizeAnswer)}`],
        headers: {},
        body,
        pids: [bare.child.pid!],
      };
      const [p, b] = await measure(config.name, product, baseline);
      rows.push(p, b);
      print(p, b);
    } catch (err) {
      console.log(`${config.name}: not measured: ${(err as Error).message}`);
    } finally {
      for (const s of servers) await s.stop();
      await bare?.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  }
  console.log(`\nload average ${loadavg()[0]!.toFixed(2)} at the end\n`);
  // Figures only (issue 17 compares LMDB with the synchronous store it replaced, not measurable
  // in the same run): listed in the summary's table without a goal.
  const goals: Goal[] = [];
  for (let i = 0; i + 1 < rows.length; i += 2) {
    const [p, b] = [rows[i]!, rows[i + 1]!];
    goals.push({
      benchmark: `authorize, ${p.name.replace(' (svc)', '')}`,
      measured: `${p.rps.toFixed(0)} req/s, p50 ${p.p50} ms, p99 ${p.p99} ms`,
      goal: '',
      met: true,
      svc: `${p.rps.toFixed(0)} req/s (p99 ${p.p99} ms)`,
      baseline: `${b.rps.toFixed(0)} req/s`,
      ratio: p.rps / b.rps,
      ...(p.cpuMsPerRequest === null ? {} : { cpuMicros: p.cpuMsPerRequest * 1000 }),
    });
  }
  console.log(goalsTable(goals));
}

await main();
process.exit(0);
