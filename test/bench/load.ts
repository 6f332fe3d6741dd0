/**
 * Load generation with autocannon: saturating throughput in alternating rounds (product, then its
 * baseline, again and again), and a fixed request rate for latency.
 * Invariants:
 * - A product route and its baseline get the same connections and the same seconds, each after
 *   its own warm-up, so that whatever else the machine does lands on both alike.
 * - Every answer that is not 2xx, every connection error and every timeout is counted, by status,
 *   and reported: a run with any of them is not a valid measurement.
 */
import autocannon, { type Result } from 'autocannon';

export interface Target {
  name: string;
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** JSON request body (sent with content-type application/json). */
  body?: string;
}

/** What the load generator reports for one round. */
interface Round {
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
}

export interface Shape {
  connections: number;
  warmupSeconds: number;
  roundSeconds: number;
  rounds: number;
}

function options(target: Target) {
  const headers = { ...target.headers, ...(target.body !== undefined ? { 'content-type': 'application/json' } : {}) };
  return { url: target.url, method: target.method ?? 'GET', headers, ...(target.body !== undefined ? { body: target.body } : {}) };
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

async function round(target: Target, connections: number, seconds: number): Promise<Round> {
  const r = await autocannon({ ...options(target), connections, duration: seconds });
  return { duration: r.duration, total: r.requests.total, p50: r.latency.p50, p99: r.latency.p99, bad: failures(r) };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * Throughput at saturation: requests/s over all rounds; latency is autocannon's (whole
 * milliseconds), the median over the rounds.
 */
export async function measureBoth(a: Target, b: Target, shape: Shape): Promise<[Measured, Measured]> {
  const warm = [await round(a, shape.connections, shape.warmupSeconds), await round(b, shape.connections, shape.warmupSeconds)];
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
  });
  return [sum(a, rounds[0], warm[0]!), sum(b, rounds[1], warm[1]!)];
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

/**
 * Latency at a fixed offered rate, from every answer's own time (sub-millisecond, not
 * autocannon's whole-millisecond histogram). autocannon paces per connection and per second: each
 * connection sends its share of the second's requests back to back, then waits for the next
 * second; so these are latencies with up to `connections` requests in flight, not evenly spaced.
 */
export async function measureAtRate(target: Target, rate: number, connections: number, seconds: number): Promise<Measured> {
  const warm = await autocannon({ ...options(target), connections, duration: 1, overallRate: rate });
  const times: number[] = [];
  const instance = autocannon({ ...options(target), connections, duration: seconds, overallRate: rate });
  instance.on('response', (_client, statusCode, _bytes, responseTime) => {
    if (statusCode >= 200 && statusCode < 300) times.push(responseTime);
  });
  const r = await instance;
  times.sort((x, y) => x - y);
  return {
    name: target.name,
    rps: r.requests.total / r.duration,
    p50: percentile(times, 50),
    p99: percentile(times, 99),
    total: r.requests.total,
    bad: addInto(failures(warm), failures(r)),
  };
}
