/**
 * Benchmark: svc's gateway beside a peer gateway and beside the least a proxy can do, same run.
 *
 * Five processes on 127.0.0.1, so that no two share an event loop or a JIT: the mock vendor
 * (mock-vendor-server.ts, OpenAI chat completions), the bare pass-through (passthrough-server.ts:
 * hapi parses the body, undici sends it on, the answer is piped back), Portkey's gateway from npm
 * (`@portkey-ai/gateway`, its own `build/start-server.js --headless`, told the vendor by its
 * `x-portkey-provider` and `x-portkey-custom-host` headers), the real `svc serve` from dist/ with
 * every feature on (gateway-fixture.ts, the `all` key: enforce mode, a workspace budget, requests and
 * tokens per minute on the key's profile and team, data-loss `redact`, the response cache, info
 * logs, call records), and this process driving them with autocannon.
 *
 * Every target is sent the same non-streamed chat completion, whose prompt carries an id unique to
 * each request (set by autocannon's `setupRequest`), so svc's cache misses every time (and keeps every answer,
 * as a cache in use does) and nothing else can answer from memory. The prompt is screened by
 * svc's data-loss scan and has nothing to redact.
 *
 * - Warm-up: BENCH_PEERS_WARMUP calls per target, not measured (their calls count towards memory).
 * - Then BENCH_PEERS_ROUNDS rounds; in each, every target in turn (the order rotating each round)
 *   answers BENCH_PEERS_CALLS / rounds calls at 16 connections. BENCH_PEERS_CALLS (default
 *   100,000) is the calls each target answers while measured.
 * - Throughput: calls / seconds over the measured rounds. Latency: each answer's time from
 *   autocannon (sub-millisecond); "added" is a percentile minus the mock's, called directly in the
 *   same rounds.
 * - Server CPU per request: utime + stime of the answering process (/proc/<pid>/stat) around
 *   each round, over the calls it answered.
 * - Memory: RssAnon and RssFile of each server (/proc/<pid>/status), sampled every 500 ms while
 *   it answers and at the end of each of its rounds; the figure after the last round, and the
 *   least-squares slope of RssAnon against calls answered after BENCH_PEERS_SETTLE (default 20%)
 *   of the measured calls.
 * Prints the tables and each goal as PASS or BELOW; a goal below is reported, not a failure. Exits
 * 1 when any request failed (a status other than 200, a connection error, a timeout) or a check of
 * the intended path did not hold, after printing all.
 * BENCH_CPU_PROF_DIR=dir: svc serve runs with --cpu-prof; BENCH_HEAP_PROF_DIR=dir: with
 * --heap-prof (the sampled allocations still live when it exits); each writes its profile there.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { call, type Reply } from '../helpers/http.js';
import { cleanEnv } from '../helpers/process.js';
import { startChild, watch, type Child } from './children.js';
import { ALL_TEAM, MODEL, startGatewayBench, VENDOR_ENV, type GatewayBench } from './gateway-fixture.js';
import { cpuTicks, percentile } from './gateway-load.js';
import { cpuMicros, failed, micros, plusMs, table, times } from './gateway-report.js';
import { goalsTable, verdict, type Goal } from './report.js';

const int = (name: string, fallback: number) => {
  const v = Number(process.env[name] ?? fallback);
  return Number.isFinite(v) && v > 0 ? Math.floor(v) : fallback;
};
const CALLS = int('BENCH_PEERS_CALLS', 100_000);
const ROUNDS = Math.min(int('BENCH_PEERS_ROUNDS', 10), CALLS);
const PER_ROUND = Math.ceil(CALLS / ROUNDS);
const WARMUP = int('BENCH_PEERS_WARMUP', Math.min(2_000, Math.ceil(CALLS / 10)));
const SETTLE = Math.min(0.9, Math.max(0, Number(process.env.BENCH_PEERS_SETTLE ?? 0.2)));
const CONNECTIONS = 16;
const SAMPLE_MS = 500;
const GOALS = {
  /** svc's req/s over Portkey's, at least. */
  throughputVsPortkey: 2,
  /** svc's server CPU per request over the bare pass-through's, at most. */
  cpuVsBare: 2,
  /** svc's anonymous RSS after the run, under (MB). */
  anonRssMB: 250,
  /** Flat: the fitted growth of anonymous RSS over the calls after settling, under this share of its level then. */
  anonGrowthShare: 0.1,
};

/** A support prompt with digits and dashes but nothing sensitive, made unique per request by `[<id>]`. */
const body = (id: string) =>
  JSON.stringify({
    model: MODEL,
    messages: [
      {
        role: 'system',
        content: 'You are a support assistant for a software company. Answer briefly and politely.',
      },
      {
        role: 'user',
        content: `Summarize ticket ${id} opened on 2024-05-01: the customer cannot sign in since the v2.3 update, has cleared the cache twice, and asks whether the last invoice can be refunded.`,
      },
    ],
    max_tokens: 64,
  });
let ids = 0;
/** Unique in the run (svc's cache keeps every answer for its TTL, so no prompt may come twice). */
const nextId = () => `T-${(ids += 1).toString(36).padStart(6, '0')}`;

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const portkeyStart = fileURLToPath(import.meta.resolve('@portkey-ai/gateway/build/start-server.js'));
const portkeyVersion = (
  JSON.parse(readFileSync(join(portkeyStart, '../../package.json'), 'utf8')) as { version: string }
).version;
const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const nodeFlags = [
  ...(process.env.BENCH_CPU_PROF_DIR
    ? ['--cpu-prof', `--cpu-prof-dir=${resolve(process.env.BENCH_CPU_PROF_DIR)}`]
    : []),
  ...(process.env.BENCH_HEAP_PROF_DIR
    ? ['--heap-prof', `--heap-prof-dir=${resolve(process.env.BENCH_HEAP_PROF_DIR)}`]
    : []),
];

interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
  pid: number;
  /** A server (not the mock) whose memory is reported. */
  server: boolean;
}

interface Memory {
  anonKB: number;
  fileKB: number;
}

/** RssAnon and RssFile of a process, in kB (NaN once it is gone). */
function memoryOf(pid: number): Memory {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kB = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { anonKB: kB('RssAnon'), fileKB: kB('RssFile') };
  } catch {
    return { anonKB: NaN, fileKB: NaN };
  }
}

interface Measured {
  target: Target;
  seconds: number;
  calls: number;
  ticks: number;
  /** Milliseconds per answer, every measured round. */
  times: number[];
  bad: Record<string, number>;
  /** Calls answered so far (warm-up included) and memory then. */
  samples: Array<Memory & { calls: number }>;
  /** Calls answered so far, warm-up included. */
  answered: number;
}

const addInto = (into: Record<string, number>, key: string, n: number) => {
  if (n > 0) into[key] = (into[key] ?? 0) + n;
};

/** `amount` calls to one target at 16 connections; times recorded when `m` is measuring. */
async function round(m: Measured, amount: number, measure: boolean): Promise<void> {
  const { target } = m;
  const before = cpuTicks(target.pid);
  const sample = () => {
    if (target.server) m.samples.push({ calls: m.answered, ...memoryOf(target.pid) });
  };
  const timer = setInterval(sample, SAMPLE_MS);
  const instance = autocannon({
    url: target.url,
    method: 'POST',
    headers: { ...target.headers, 'content-type': 'application/json' },
    connections: CONNECTIONS,
    amount,
    requests: [{ setupRequest: (request) => ({ ...request, body: body(nextId()) }) }],
  });
  instance.on('response', (_client, status, _bytes, responseTime) => {
    m.answered += 1;
    if (measure && status === 200) m.times.push(responseTime);
  });
  const r = await instance;
  clearInterval(timer);
  sample();
  const ticks = cpuTicks(target.pid) - before;
  for (const [status, { count }] of Object.entries(r.statusCodeStats))
    if (status !== '200') addInto(m.bad, status, Number(count));
  addInto(m.bad, 'errors', r.errors);
  addInto(m.bad, 'timeouts', r.timeouts);
  if (!measure) return;
  m.seconds += r.duration;
  m.calls += r.requests.total;
  m.ticks += ticks;
}

/** A free loopback port (Portkey's server takes a port number, not 0). */
function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolvePort(port));
    });
  });
}

/** Portkey's gateway as its package starts it (`--headless`: no console UI), ready once `GET /` answers. */
async function startPortkey(): Promise<Child<{ listening: string }>> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [portkeyStart, `--port=${port}`, '--headless'], {
    env: cleanEnv({ NODE_ENV: 'production' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.resume();
  child.stderr!.resume();
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const reap = () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  };
  process.once('exit', reap);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    process.off('exit', reap);
  };
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i += 1) {
    if (child.exitCode !== null) throw new Error(`Portkey's gateway exited with ${child.exitCode}`);
    try {
      if ((await call(url, 'GET', '/')).status === 200) return { child, boot: { listening: url }, url, stop };
    } catch {
      /* not listening yet */
    }
    await sleep(100);
  }
  await stop();
  throw new Error("Portkey's gateway did not answer within 30 s");
}

function expect(what: string, reply: Reply, check: (r: Reply) => boolean): void {
  if (reply.status !== 200 || !check(reply))
    throw new Error(`${what}: got ${reply.status} ${JSON.stringify(reply.headers)} ${reply.text.slice(0, 400)}`);
}

const send = (t: Target, id: string) => {
  const url = new URL(t.url);
  return call(url.origin, 'POST', url.pathname, {
    headers: { ...t.headers, 'content-type': 'application/json' },
    body: body(id),
  });
};

/** One call to each: the echo from every target, and svc's headers saying every feature is on. */
async function preflight(targets: Target[], gateway: GatewayBench): Promise<void> {
  const echoed = (id: string) => (r: Reply) =>
    String(r.body.choices?.[0]?.message?.content).startsWith(`echo: Summarize ticket ${id} `);
  for (const t of targets) expect(t.name, await send(t, `pre-${t.pid}`), echoed(`pre-${t.pid}`));
  const svc = targets.find((t) => t.name.startsWith('svc'))!;
  const first = await send(svc, 'pre-cache');
  const h = first.headers;
  expect('svc, every feature', first, (r) => {
    const ok =
      echoed('pre-cache')(r) &&
      h['x-svc-routed-to'] === MODEL &&
      h['x-svc-cache'] === 'miss' &&
      h['x-svc-budget-scope'] === `workspace:${gateway.workspaceId}` &&
      h['x-svc-enforcement'] === 'observe' &&
      typeof h['x-ratelimit-limit-requests'] === 'string' &&
      typeof h['x-svc-cost-micros'] === 'string' &&
      h['x-svc-redacted'] === undefined;
    return ok;
  });
  // The same prompt again is answered from the cache: the cache is on, and the measured calls miss it.
  const again = await send(svc, 'pre-cache');
  expect('svc, the same prompt again', again, (r) => r.headers['x-svc-cache'] === 'hit');
  console.log(
    `svc answer headers: ${Object.entries(h)
      .filter(([k]) => k.startsWith('x-svc-') || k.startsWith('x-ratelimit-'))
      .map(([k, v]) => `${k}: ${String(v)}`)
      .join('; ')}\n`,
  );
}

const MB = (kB: number) => kB / 1024;
const mb = (kB: number) => (Number.isFinite(kB) ? MB(kB).toFixed(0) : '-');

/** Least-squares slope of y over x, and the fitted y at the first and last x. */
function fit(points: Array<{ x: number; y: number }>): { slope: number; from: number; to: number } {
  const n = points.length;
  if (n < 2) return { slope: NaN, from: NaN, to: NaN };
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  const sxx = points.reduce((s, p) => s + (p.x - mx) ** 2, 0);
  const slope = sxx === 0 ? NaN : points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0) / sxx;
  const x0 = points[0]!.x;
  const x1 = points[n - 1]!.x;
  return { slope, from: my + slope * (x0 - mx), to: my + slope * (x1 - mx) };
}

interface Growth {
  /** MB of anonymous RSS per 10,000 calls after settling. */
  slopeMBPer10k: number;
  /** Fitted anonymous RSS at the first and last settled sample (MB). */
  fromMB: number;
  toMB: number;
  samples: number;
  settledAt: number;
}

function growthOf(m: Measured): Growth {
  const settledAt = WARMUP + Math.round(SETTLE * CALLS);
  const points = m.samples
    .filter((s) => s.calls >= settledAt && Number.isFinite(s.anonKB))
    .map((s) => ({ x: s.calls, y: MB(s.anonKB) }));
  const f = fit(points);
  return { slopeMBPer10k: f.slope * 10_000, fromMB: f.from, toMB: f.to, samples: points.length, settledAt };
}

async function main(): Promise<number> {
  console.log(
    `peer gateways: svc serve (dist/, every feature on: enforce, budget, limits, data-loss redact, cache miss), Portkey's gateway ${portkeyVersion} (npm), a bare hapi + undici pass-through, and the mock vendor alone; each its own process, Node ${process.version}`,
  );
  console.log(
    `${CONNECTIONS} connections (autocannon), a prompt unique per call; ${WARMUP} warm-up calls each, then ${ROUNDS} alternating rounds of ${PER_ROUND} calls each (${PER_ROUND * ROUNDS} measured calls per target)`,
  );
  console.log(`machine: ${availableParallelism()} CPUs, load average ${load()} at start\n`);

  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-peers-'));
  const started: Array<{ stop(): Promise<void> }> = [];
  const stopping = { now: false };
  try {
    const mock = await startChild<{ listening: string; control: string }>(
      ['--import=tsx', here('./mock-vendor-server.ts')],
      cleanEnv(),
    );
    started.push(mock);
    watch('the mock vendor', mock, stopping);
    const bare = await startChild<{ listening: string }>(
      ['--import=tsx', here('./passthrough-server.ts'), mock.url],
      cleanEnv(VENDOR_ENV),
    );
    started.push(bare);
    watch('the bare pass-through', bare, stopping);
    const portkey = await startPortkey();
    started.push(portkey);
    watch("Portkey's gateway", portkey, stopping);
    const gateway = await startGatewayBench(dataDir, mock.url, nodeFlags);
    started.push(gateway.server);
    const svcLog = watch('svc serve', gateway.server, stopping);

    const path = '/v1/chat/completions';
    const vendorAuth = { authorization: `Bearer ${VENDOR_ENV.VENDOR_O_KEY}` };
    const targets: Target[] = [
      {
        name: 'mock vendor alone',
        url: `${mock.url}${path}`,
        headers: vendorAuth,
        pid: mock.child.pid!,
        server: false,
      },
      {
        name: 'bare hapi + undici',
        url: `${bare.url}${path}`,
        headers: vendorAuth,
        pid: bare.child.pid!,
        server: true,
      },
      {
        name: `Portkey ${portkeyVersion}`,
        url: `${portkey.url}${path}`,
        headers: { ...vendorAuth, 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${mock.url}/v1` },
        pid: portkey.child.pid!,
        server: true,
      },
      {
        name: 'svc, every feature on',
        url: `${gateway.server.url}${path}`,
        headers: { authorization: `Bearer ${gateway.keys.all}`, 'x-svc-objective': 'cost' },
        pid: gateway.server.child.pid!,
        server: true,
      },
    ];
    await preflight(targets, gateway);

    const runs: Measured[] = targets.map((target) => ({
      target,
      seconds: 0,
      calls: 0,
      ticks: 0,
      times: [],
      bad: {},
      samples: [{ calls: 0, ...memoryOf(target.pid) }],
      answered: 0,
    }));
    const started0 = performance.now();
    for (const m of runs) await round(m, WARMUP, false);
    for (let r = 0; r < ROUNDS; r += 1) {
      const order = runs.map((_, i) => runs[(i + r) % runs.length]!);
      for (const m of order) await round(m, PER_ROUND, true);
      const elapsed = ((performance.now() - started0) / 1000).toFixed(0);
      const svcNow = runs[3]!.samples.at(-1)!;
      console.log(
        `round ${r + 1}/${ROUNDS} done at ${elapsed} s, load average ${load()}; svc RSS anon ${mb(svcNow.anonKB)} MB, file ${mb(svcNow.fileKB)} MB after ${svcNow.calls} calls`,
      );
    }

    // Every answered call of svc left a call record (written behind; flushed for the report).
    const usage = await call(gateway.server.url, 'GET', '/v1/admin/usage?by=principal', {
      headers: { authorization: `Bearer ${gateway.keys.admin}` },
    });
    const recorded =
      usage.status === 200
        ? ((usage.body.data as Array<{ group: string; calls: number }>).find((g) => g.group === ALL_TEAM)?.calls ?? 0)
        : -1;

    const [mockRun, bareRun, portkeyRun, svcRun] = runs as [Measured, Measured, Measured, Measured];
    for (const m of runs) m.times.sort((a, b) => a - b);
    const rps = (m: Measured) => m.calls / m.seconds;
    const cpu = (m: Measured) => cpuMicros(m.ticks, m.calls);
    const q = (m: Measured, p: number) => percentile(m.times, p);
    const last = (m: Measured) => m.samples.at(-1)!;
    console.log(`\nload average ${load()} at the end\n`);
    console.log(
      table(
        [
          `${CONNECTIONS} connections`,
          'calls',
          'req/s',
          'vs Portkey',
          'p50 ms',
          'p99 ms',
          'added p50 ms',
          'added p99 ms',
          'CPU µs/req',
          'CPU vs bare',
          'RssAnon MB',
          'RssFile MB',
          'failed',
        ],
        runs.map((m) => [
          m.target.name,
          String(m.calls),
          rps(m).toFixed(0),
          times(rps(m), rps(portkeyRun)),
          q(m, 50).toFixed(3),
          q(m, 99).toFixed(3),
          m === mockRun ? '-' : plusMs(q(m, 50) - q(mockRun, 50)),
          m === mockRun ? '-' : plusMs(q(m, 99) - q(mockRun, 99)),
          micros(cpu(m)),
          times(cpu(m), cpu(bareRun)),
          m.target.server ? mb(last(m).anonKB) : '-',
          m.target.server ? mb(last(m).fileKB) : '-',
          failed(m.bad),
        ]),
      ),
    );
    const growth = runs.filter((m) => m.target.server).map((m) => ({ m, g: growthOf(m) }));
    console.log('');
    console.log(
      table(
        [
          'memory (RSS, MB)',
          'anon at start',
          'anon after warm-up',
          'anon peak',
          'anon at end',
          'file at end',
          'anon slope after settling, MB / 10k calls',
          'fitted anon from -> to',
          'samples',
        ],
        growth.map(({ m, g }) => {
          const warm = m.samples.find((s) => s.calls >= WARMUP) ?? m.samples[0]!;
          return [
            m.target.name,
            mb(m.samples[0]!.anonKB),
            mb(warm.anonKB),
            mb(Math.max(...m.samples.map((s) => s.anonKB))),
            mb(last(m).anonKB),
            mb(last(m).fileKB),
            Number.isFinite(g.slopeMBPer10k) ? g.slopeMBPer10k.toFixed(2) : '-',
            `${g.fromMB.toFixed(0)} -> ${g.toMB.toFixed(0)} (calls ${g.settledAt}-${m.answered})`,
            String(g.samples),
          ];
        }),
      ),
    );
    console.log(
      `\nsvc call records of the measured key: ${recorded} (it answered ${svcRun.answered + 2} calls, warm-up and preflight included); svc error-level log lines: ${svcLog.errors}\n`,
    );

    const svcGrowth = growthOf(svcRun);
    const svcAnonMB = MB(last(svcRun).anonKB);
    const throughput = rps(svcRun) / rps(portkeyRun);
    const cpuRatio = cpu(svcRun) / cpu(bareRun);
    const grown = svcGrowth.toMB - svcGrowth.fromMB;
    const figures = { svc: `${rps(svcRun).toFixed(0)} req/s`, cpuMicros: cpu(svcRun) };
    const goals: Goal[] = [
      {
        benchmark: `throughput vs Portkey, ${CONNECTIONS} conn`,
        measured: `${throughput.toFixed(2)}x Portkey's req/s (${rps(svcRun).toFixed(0)} vs ${rps(portkeyRun).toFixed(0)}; bare ${rps(bareRun).toFixed(0)})`,
        goal: `>= ${GOALS.throughputVsPortkey.toFixed(2)}x`,
        met: throughput >= GOALS.throughputVsPortkey,
        ...figures,
        baseline: `${rps(portkeyRun).toFixed(0)} req/s (Portkey)`,
        ratio: throughput,
      },
      {
        benchmark: `server CPU per request vs bare, ${CONNECTIONS} conn`,
        measured: `${cpuRatio.toFixed(2)}x bare (${micros(cpu(svcRun))} vs ${micros(cpu(bareRun))} µs; Portkey ${micros(cpu(portkeyRun))} µs)`,
        goal: `<= ${GOALS.cpuVsBare.toFixed(2)}x`,
        met: cpuRatio <= GOALS.cpuVsBare,
        ...figures,
        baseline: `${micros(cpu(bareRun))} µs/req (bare)`,
        ratio: cpuRatio,
      },
      {
        benchmark: `anonymous RSS after ${svcRun.answered} calls`,
        measured: `${svcAnonMB.toFixed(0)} MB (file-mapped ${mb(last(svcRun).fileKB)} MB; Portkey ${mb(last(portkeyRun).anonKB)} MB anon)`,
        goal: `< ${GOALS.anonRssMB} MB`,
        met: svcAnonMB < GOALS.anonRssMB,
        ...figures,
      },
      {
        benchmark: 'anonymous RSS flat after warm-up',
        measured: `${svcGrowth.slopeMBPer10k.toFixed(2)} MB per 10k calls: fitted ${svcGrowth.fromMB.toFixed(0)} -> ${svcGrowth.toMB.toFixed(0)} MB over calls ${svcGrowth.settledAt}-${svcRun.answered}`,
        goal: `grows < ${(GOALS.anonGrowthShare * 100).toFixed(0)}%`,
        met: Number.isFinite(grown) && grown < GOALS.anonGrowthShare * svcGrowth.fromMB,
        ...figures,
      },
    ];
    console.log(goalsTable(goals));

    const problems: string[] = [];
    const failures = runs.reduce((n, m) => n + Object.values(m.bad).reduce((a, b) => a + b, 0), 0);
    if (failures > 0) problems.push(`${failures} requests failed (see "failed" above)`);
    if (recorded < svcRun.answered)
      problems.push(`only ${recorded} call records for ${svcRun.answered} calls (usage answered ${usage.status})`);
    const missed = goals.filter((g) => !g.met);
    if (missed.length > 0)
      console.log(`\nbelow goal (reported, not a failure): ${missed.map((g) => g.benchmark).join(', ')}`);
    return verdict(problems);
  } finally {
    stopping.now = true;
    for (const child of started.reverse()) await child.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
