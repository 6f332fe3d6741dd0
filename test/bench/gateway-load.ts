/**
 * Load for the gateway benchmark, beside load.ts:
 * - `sequential`: one connection, one request at a time, each timed with performance.now() (sub-ms:
 *   autocannon's histogram is whole milliseconds, and the differences measured here are tenths of
 *   one) from sending to the first body chunk (time to first byte) and to the end of the body.
 * - `saturate`: autocannon at N connections, in rounds alternating over the targets.
 * Both read the server process's CPU time (utime + stime from /proc/<pid>/stat) around each
 * measured stretch, and count every unexpected status, connection error, timeout or incomplete
 * stream as failed.
 * Invariants: targets take turns round by round with the same seconds, so that whatever else the
 * machine does lands on all of them alike; warm-up requests are never counted.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { Client } from 'undici';
import type { Shape } from './load.js';

/** Connections, warm-up and alternating rounds: the same shape as the gate's benchmark. */
export type { Shape };

export interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
  /** JSON request body. */
  body: string;
  /** Whether the answer is an event stream: OpenAI chat-shaped (ending with `data: [DONE]`) unless `end` says. */
  stream: boolean;
  /** What the end of a whole stream matches (its last 8 KB), when not `data: [DONE]` (Responses' events). */
  end?: RegExp;
  /** The status a correct answer has (200 unless a refusal is measured). */
  status?: number;
  /** The process answering, whose CPU time is read. */
  pid?: number;
}

/** Clock ticks per second of /proc/<pid>/stat's times. */
export const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU ticks (user + system) the process has used so far; 0 without a pid, NaN once it is gone. */
export function cpuTicks(pid: number | undefined): number {
  if (pid === undefined) return 0;
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return NaN;
  }
  // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

const addInto = (into: Record<string, number>, key: string, n = 1) => {
  into[key] = (into[key] ?? 0) + n;
};

export const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

export interface Sequential {
  name: string;
  /** Milliseconds to the end of each answer, sorted. */
  total: number[];
  /** Milliseconds to each answer's first body chunk, sorted. */
  ttfb: number[];
  /** The server's own x-svc-overhead-micros, where it sends one, sorted. */
  overheadMicros: number[];
  cpuTicks: number;
  bad: Record<string, number>;
  /** Requests sent while measuring (warm-ups not included). */
  requests: number;
}

interface Runner {
  target: Target;
  path: string;
  headers: Record<string, string>;
  client: Client;
  result: Sequential;
}

async function once(r: Runner, record: boolean): Promise<void> {
  const { target } = r;
  const t0 = performance.now();
  try {
    const res = await r.client.request({ path: r.path, method: 'POST', headers: r.headers, body: target.body });
    let first = 0;
    let tail = '';
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      if (first === 0) first = performance.now();
      if (target.stream) tail = (tail + chunk.toString('latin1')).slice(target.end ? -8192 : -64);
    }
    const end = performance.now();
    if (res.statusCode !== (target.status ?? 200)) return addInto(r.result.bad, String(res.statusCode));
    // A stream that does not end with the vendor's closing event was cut.
    if (target.stream && !(target.end ?? /data: \[DONE\]\s*$/).test(tail))
      return addInto(r.result.bad, 'incomplete stream');
    if (!record) return;
    r.result.total.push(end - t0);
    r.result.ttfb.push((first || end) - t0);
    const overhead = res.headers['x-svc-overhead-micros'];
    if (typeof overhead === 'string') r.result.overheadMicros.push(Number(overhead));
  } catch (err) {
    addInto(r.result.bad, `error ${(err as { code?: string }).code ?? (err as Error).name}`);
  }
}

async function loop(r: Runner, seconds: number, record: boolean): Promise<number> {
  const until = performance.now() + seconds * 1000;
  let n = 0;
  while (performance.now() < until) {
    await once(r, record);
    n += 1;
  }
  return n;
}

/**
 * Every target in turn, `rounds` times: a short warm-up on its connection (failures counted, times
 * not), then `seconds` of sequential requests recorded, with the server's CPU time read around them.
 */
export async function sequential(
  targets: Target[],
  rounds: number,
  seconds: number,
  warmupSeconds = 0.2,
): Promise<Sequential[]> {
  const runners: Runner[] = targets.map((target) => ({
    target,
    path: new URL(target.url).pathname + new URL(target.url).search,
    headers: { ...target.headers, 'content-type': 'application/json' },
    client: new Client(new URL(target.url).origin, { pipelining: 1, keepAliveTimeout: 60_000 }),
    result: { name: target.name, total: [], ttfb: [], overheadMicros: [], cpuTicks: 0, bad: {}, requests: 0 },
  }));
  try {
    for (let i = 0; i < rounds; i += 1) {
      for (const r of runners) {
        await loop(r, warmupSeconds, false);
        const before = cpuTicks(r.target.pid);
        r.result.requests += await loop(r, seconds, true);
        r.result.cpuTicks += cpuTicks(r.target.pid) - before;
      }
    }
  } finally {
    await Promise.all(runners.map((r) => r.client.close()));
  }
  for (const { result } of runners)
    for (const xs of [result.total, result.ttfb, result.overheadMicros]) xs.sort((a, b) => a - b);
  return runners.map((r) => r.result);
}

export interface Saturated {
  name: string;
  rps: number;
  /** autocannon's, whole milliseconds: the median over the rounds. */
  p50: number;
  p99: number;
  requests: number;
  cpuTicks: number;
  bad: Record<string, number>;
}

async function cannon(target: Target, connections: number, seconds: number) {
  const headers = { ...target.headers, 'content-type': 'application/json' };
  const before = cpuTicks(target.pid);
  const r = await autocannon({
    url: target.url,
    method: 'POST',
    headers,
    body: target.body,
    connections,
    duration: seconds,
  });
  const ticks = cpuTicks(target.pid) - before;
  const bad: Record<string, number> = {};
  const expected = String(target.status ?? 200);
  for (const [status, { count }] of Object.entries(r.statusCodeStats))
    if (status !== expected) addInto(bad, status, Number(count));
  if (r.errors > 0) addInto(bad, 'errors', r.errors);
  if (r.timeouts > 0) addInto(bad, 'timeouts', r.timeouts);
  return { duration: r.duration, total: r.requests.total, p50: r.latency.p50, p99: r.latency.p99, ticks, bad };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Throughput at saturation: each target warmed up, then `rounds` rounds taking turns. */
export async function saturate(targets: Target[], shape: Shape): Promise<Saturated[]> {
  const bad = targets.map(() => ({}) as Record<string, number>);
  for (const [i, t] of targets.entries()) {
    const warm = await cannon(t, shape.connections, shape.warmupSeconds);
    for (const [k, n] of Object.entries(warm.bad)) addInto(bad[i]!, k, n);
  }
  const rounds = targets.map(() => [] as Array<Awaited<ReturnType<typeof cannon>>>);
  for (let round = 0; round < shape.rounds; round += 1) {
    for (const [i, t] of targets.entries()) rounds[i]!.push(await cannon(t, shape.connections, shape.roundSeconds));
  }
  return targets.map((t, i) => {
    const rs = rounds[i]!;
    for (const r of rs) for (const [k, n] of Object.entries(r.bad)) addInto(bad[i]!, k, n);
    return {
      name: t.name,
      rps: rs.reduce((n, r) => n + r.total, 0) / rs.reduce((n, r) => n + r.duration, 0),
      p50: median(rs.map((r) => r.p50)),
      p99: median(rs.map((r) => r.p99)),
      requests: rs.reduce((n, r) => n + r.total, 0),
      cpuTicks: rs.reduce((n, r) => n + r.ticks, 0),
      bad: bad[i]!,
    };
  });
}
