/**
 * Load generation for the MCP benchmark: closed loops over N connections ("lanes"), each sending
 * its next request once its last answer is read, timed with performance.now() (sub-ms).
 * autocannon cannot do what this one must: a refresh grant's body depends on the answer to the
 * one before it (each grant spends the refresh token it sends), and an MCP answer is judged by
 * its body (a refusal is a 200 with `isError` or a JSON-RPC error), so every answer is read whole
 * and judged by its lane. A baseline is driven by the same loop, so that both pay the same
 * client cost.
 * Invariants:
 * - Targets take turns round by round with the same seconds, each after its own warm-up, so that
 *   whatever else the machine does lands on all of them alike; warm-up answers are never timed.
 * - Every answer its lane does not accept, every connection error, is counted as failed, by why.
 * - A lane that says it cannot go on (a chain whose last grant failed: its refresh token may or
 *   may not be spent, and reusing a spent one ends the connection) sends nothing more.
 * The CPU time (utime + stime) of each named server process is read around each measured stretch.
 * A lane makes each body when it sends it (and may sign it then: `headersFor`), inside the timed
 * span, so that a product and its baseline given the same kind of lanes pay the same client cost.
 * A target may fan out (`fanOut`: n): each lane then holds n connections and sends each body on all
 * of them at once (concurrent refreshes of one token); the step is timed until every answer is
 * read, and judged as one (`judgeAll`). Its figures count answers: a step is n of them.
 */
import { Client } from 'undici';
import { cpuTicks, percentile } from './gateway-load.js';
import type { Shape } from './load.js';

/** Connections, warm-up and alternating rounds: the same shape as the gate's benchmark. */
export type { Shape };

export type Answer = { status: number; contentType: string; text: string } | { error: string };

export interface Lane {
  /** The next request's body. */
  next(): string;
  /** Headers made for that very body (a signature made at send time), added to the target's. */
  headersFor?(body: string): Record<string, string>;
  /** undefined when the answer is what it should be; else why not (counted as failed). */
  judge(answer: Answer): string | undefined;
  /** For a target that fans out: the step's answers judged together (else each by `judge`). */
  judgeAll?(answers: Answer[]): string | undefined;
  /** Once true, the lane sends nothing more. */
  stopped: boolean;
}

export interface LoopTarget {
  name: string;
  url: string;
  headers: Record<string, string>;
  /** One per connection. */
  lanes: Lane[];
  /** The processes whose CPU time is read (the server answering, and any it calls). */
  pids: number[];
  /** A request sent before each measured one on the same connection, answered 200; the pair is timed as one. */
  prelude?: string;
  /** Each body sent at once on this many connections of the lane (default 1); not with `prelude`. */
  fanOut?: number;
  /** Counters read around each measured stretch (the upstream's requests by method): `Looped.counted` sums their growth. */
  counters?: () => Promise<Record<string, number>>;
}

export interface Looped {
  name: string;
  /** Answers per step (the target's `fanOut`); latencies are of whole steps. */
  fanOut: number;
  /** Accepted answers per second over the measured rounds. */
  rps: number;
  /** Milliseconds, over every accepted answer (step) of the measured rounds. */
  p50: number;
  p99: number;
  /** Accepted answers in the measured rounds. */
  requests: number;
  /** Accepted answers, warm-ups included (what the servers did in all). */
  answeredAll: number;
  /** CPU ticks of each of `pids` over the measured rounds. */
  cpuTicks: number[];
  bad: Record<string, number>;
  /** Lanes that stopped (after a failure). */
  stopped: number;
  /** How much each of the target's `counters` grew over the measured rounds. */
  counted: Record<string, number>;
}

interface Running {
  target: LoopTarget;
  path: string;
  clients: Client[];
  times: number[];
  seconds: number;
  answeredAll: number;
  ticks: number[];
  bad: Record<string, number>;
  counted: Record<string, number>;
}

const addInto = (into: Record<string, number>, key: string) => {
  into[key] = (into[key] ?? 0) + 1;
};

async function post(client: Client, path: string, headers: Record<string, string>, body: string): Promise<Answer> {
  try {
    const res = await client.request({ path, method: 'POST', headers, body });
    const text = await res.body.text();
    return { status: res.statusCode, contentType: String(res.headers['content-type'] ?? ''), text };
  } catch (err) {
    return { error: (err as { code?: string }).code ?? (err as Error).name };
  }
}

async function lane(r: Running, i: number, until: number, record: boolean): Promise<void> {
  const { target } = r;
  const lane = target.lanes[i]!;
  const fanOut = target.fanOut ?? 1;
  const client = r.clients[i * fanOut]!;
  while (!lane.stopped && performance.now() < until) {
    const t0 = performance.now();
    if (target.prelude !== undefined) {
      const pre = await post(client, r.path, target.headers, target.prelude);
      if ('error' in pre || pre.status !== 200) {
        addInto(r.bad, `prelude ${'error' in pre ? pre.error : pre.status}`);
        continue;
      }
    }
    const body = lane.next();
    const headers = lane.headersFor ? { ...target.headers, ...lane.headersFor(body) } : target.headers;
    const answers = await Promise.all(
      r.clients.slice(i * fanOut, (i + 1) * fanOut).map((c) => post(c, r.path, headers, body)),
    );
    const end = performance.now();
    const why = lane.judgeAll ? lane.judgeAll(answers) : answers.map((a) => lane.judge(a)).find((w) => w !== undefined);
    if (why !== undefined) {
      addInto(r.bad, why);
      continue;
    }
    r.answeredAll += fanOut;
    if (record) r.times.push(end - t0);
  }
}

async function stretch(r: Running, seconds: number, record: boolean): Promise<void> {
  const counted = record && r.target.counters ? await r.target.counters() : undefined;
  const before = r.target.pids.map(cpuTicks);
  const start = performance.now();
  const until = start + seconds * 1000;
  await Promise.all(r.target.lanes.map((_, i) => lane(r, i, until, record)));
  if (!record) return;
  r.seconds += (performance.now() - start) / 1000;
  r.target.pids.forEach((pid, k) => {
    r.ticks[k]! += cpuTicks(pid) - before[k]!;
  });
  if (!counted) return;
  for (const [key, n] of Object.entries(await r.target.counters!()))
    if (n !== (counted[key] ?? 0)) r.counted[key] = (r.counted[key] ?? 0) + n - (counted[key] ?? 0);
}

/** Each target warmed up, then `rounds` rounds taking turns, at `lanes.length` connections each. */
export async function closedLoop(targets: LoopTarget[], shape: Shape): Promise<Looped[]> {
  const running: Running[] = targets.map((target) => ({
    target,
    path: new URL(target.url).pathname + new URL(target.url).search,
    clients: Array.from(
      { length: target.lanes.length * (target.fanOut ?? 1) },
      () => new Client(new URL(target.url).origin, { pipelining: 1, keepAliveTimeout: 60_000 }),
    ),
    times: [],
    seconds: 0,
    answeredAll: 0,
    ticks: target.pids.map(() => 0),
    bad: {},
    counted: {},
  }));
  try {
    for (const r of running) await stretch(r, shape.warmupSeconds, false);
    for (let i = 0; i < shape.rounds; i += 1) for (const r of running) await stretch(r, shape.roundSeconds, true);
  } finally {
    await Promise.all(running.flatMap((r) => r.clients.map((c) => c.close())));
  }
  return running.map((r) => {
    r.times.sort((a, b) => a - b);
    const fanOut = r.target.fanOut ?? 1;
    return {
      name: r.target.name,
      fanOut,
      rps: (r.times.length * fanOut) / r.seconds,
      p50: percentile(r.times, 50),
      p99: percentile(r.times, 99),
      requests: r.times.length * fanOut,
      answeredAll: r.answeredAll,
      cpuTicks: r.ticks,
      bad: r.bad,
      stopped: r.target.lanes.filter((l) => l.stopped).length,
      counted: r.counted,
    };
  });
}

/** A lane that sends the same body again and again and judges each answer with `judge`. */
export function fixedLane(body: string, judge: (answer: Answer) => string | undefined): Lane {
  return { next: () => body, judge, stopped: false };
}

/** Why an answer that is not even a 200 failed: its status, or its connection error. */
export const notOk = (answer: Answer): string | undefined =>
  'error' in answer ? `error ${answer.error}` : answer.status !== 200 ? String(answer.status) : undefined;
