/**
 * Load generation: saturating throughput with autocannon in alternating rounds (product, then its
 * baseline, again and again), and latency at a fixed rate with an open-loop generator (undici).
 * Invariants:
 * - A product route and its baseline get the same connections and the same seconds, each after
 *   its own warm-up, so that whatever else the machine does lands on both alike.
 * - Every answer that is not 2xx, every connection error and every timeout is counted, by status,
 *   and reported: a run with any of them is not a valid measurement.
 */
import autocannon, { type Result } from 'autocannon';
import { readFileSync } from 'node:fs';
import { Pool } from 'undici';

export interface Target {
  name: string;
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** JSON request body (sent with content-type application/json). */
  body?: string;
  /** The server process answering it: its CPU over the measured rounds gives `cpuMicros`. */
  pid?: number;
}

/** What the load generator reports for one round. */
interface Round {
  /** The server's CPU milliseconds over the round (0 without a pid). */
  cpuMs: number;
  duration: number;
  total: number;
  p50: number;
  p99: number;
  bad: Record<string, number>;
}

export interface Measured {
  name: string;
  rps: number;
  /** Milliseconds. */
  p50: number;
  p99: number;
  total: number;
  /** Failed requests by HTTP status, or `errors` and `timeouts`. */
  bad: Record<string, number>;
  /** Microseconds of the server's CPU (every thread) per request answered, when its pid is known. */
  cpuMicros?: number;
}

export interface Shape {
  connections: number;
  warmupSeconds: number;
  roundSeconds: number;
  rounds: number;
}

function options(target: Target) {
  const headers = { ...target.headers, ...(target.body !== undefined ? { 'content-type': 'application/json' } : {}) };
  return {
    url: target.url,
    method: target.method ?? 'GET',
    headers,
    ...(target.body !== undefined ? { body: target.body } : {}),
  };
}

function failures(r: Result): Record<string, number> {
  const bad: Record<string, number> = {};
  for (const [status, { count }] of Object.entries(r.statusCodeStats)) {
    if (!status.startsWith('2')) bad[status] = Number(count);
  }
  if (r.errors > 0) bad.errors = r.errors;
  if (r.timeouts > 0) bad.timeouts = r.timeouts;
  return bad;
}

function addInto(into: Record<string, number>, from: Record<string, number>): Record<string, number> {
  for (const [k, n] of Object.entries(from)) into[k] = (into[k] ?? 0) + n;
  return into;
}

export const badCount = (bad: Record<string, number>) => Object.values(bad).reduce((n, v) => n + v, 0);

const TICKS = 100; // USER_HZ: /proc's clock ticks per second on Linux

/** User + system CPU milliseconds of a process, every thread; 0 when unknown. */
export function processCpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS;
  } catch {
    return 0;
  }
}

async function round(target: Target, connections: number, seconds: number): Promise<Round> {
  const before = processCpuMs(target.pid);
  const r = await autocannon({ ...options(target), connections, duration: seconds });
  return {
    cpuMs: processCpuMs(target.pid) - before,
    duration: r.duration,
    total: r.requests.total,
    p50: r.latency.p50,
    p99: r.latency.p99,
    bad: failures(r),
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * Throughput at saturation: requests/s over all rounds; latency is autocannon's (whole
 * milliseconds), the median over the rounds.
 */
export async function measureBoth(a: Target, b: Target, shape: Shape): Promise<[Measured, Measured]> {
  const warm = [
    await round(a, shape.connections, shape.warmupSeconds),
    await round(b, shape.connections, shape.warmupSeconds),
  ];
  const rounds: [Round[], Round[]] = [[], []];
  for (let i = 0; i < shape.rounds; i += 1) {
    rounds[0].push(await round(a, shape.connections, shape.roundSeconds));
    rounds[1].push(await round(b, shape.connections, shape.roundSeconds));
  }
  const sum = (target: Target, results: Round[], warmup: Round): Measured => ({
    name: target.name,
    rps: results.reduce((n, r) => n + r.total, 0) / results.reduce((n, r) => n + r.duration, 0),
    p50: median(results.map((r) => r.p50)),
    p99: median(results.map((r) => r.p99)),
    total: results.reduce((n, r) => n + r.total, 0),
    bad: [warmup, ...results].reduce((into, r) => addInto(into, r.bad), {} as Record<string, number>),
    ...(target.pid === undefined
      ? {}
      : { cpuMicros: (results.reduce((n, r) => n + r.cpuMs, 0) * 1000) / results.reduce((n, r) => n + r.total, 0) }),
  });
  return [sum(a, rounds[0], warm[0]!), sum(b, rounds[1], warm[1]!)];
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

/**
 * Latency at a fixed offered rate, open loop: requests leave at evenly spaced times whatever the
 * answers do (as independent agents would send them), each timed from its own departure to its
 * whole answer, sub-millisecond. A closed-loop generator (autocannon's overallRate sends each
 * connection's share of a second back to back) would measure its own queue instead: with c
 * requests in flight, latency is c divided by throughput, whatever the server's own latency.
 */
export async function measureAtRate(
  target: Target,
  rate: number,
  connections: number,
  seconds: number,
): Promise<Measured> {
  const url = new URL(target.url);
  const pool = new Pool(url.origin, { connections, pipelining: 1 });
  const headers = { ...target.headers, ...(target.body !== undefined ? { 'content-type': 'application/json' } : {}) };
  const send = async (times: number[], bad: Record<string, number>) => {
    const t0 = performance.now();
    try {
      const res = await pool.request({
        path: url.pathname + url.search,
        method: target.method ?? 'GET',
        headers,
        body: target.body ?? null,
      });
      await res.body.dump();
      if (res.statusCode >= 200 && res.statusCode < 300) times.push(performance.now() - t0);
      else bad[res.statusCode] = (bad[res.statusCode] ?? 0) + 1;
    } catch {
      bad.errors = (bad.errors ?? 0) + 1;
    }
  };
  const run = async (secs: number) => {
    const times: number[] = [];
    const bad: Record<string, number> = {};
    const inFlight: Array<Promise<void>> = [];
    const total = Math.round(rate * secs);
    const start = performance.now();
    let sent = 0;
    while (sent < total) {
      const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * rate) + 1);
      for (; sent < due; sent += 1) inFlight.push(send(times, bad));
      await new Promise((r) => setTimeout(r, 1));
    }
    await Promise.all(inFlight);
    return { times, bad, duration: (performance.now() - start) / 1000 };
  };
  try {
    const warm = await run(1);
    const r = await run(seconds);
    r.times.sort((x, y) => x - y);
    return {
      name: target.name,
      rps: r.times.length / r.duration,
      p50: percentile(r.times, 50),
      p99: percentile(r.times, 99),
      total: r.times.length + badCount(r.bad),
      bad: addInto(warm.bad, r.bad),
    };
  } finally {
    await pool.close();
  }
}
