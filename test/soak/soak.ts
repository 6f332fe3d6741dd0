/**
 * The soak (`npm run soak`, not part of `npm test`): the real `svc serve` under a moderate, fixed
 * rate of mixed traffic for a long while, watched for what only time shows (memory that grows,
 * latency that creeps, an error that comes once in ten thousand).
 *
 * Processes, each its own: the mock model vendor (test/bench/mock-vendor-server.ts), the upstream
 * MCP server (test/bench/mcp-upstream-server.ts), `svc serve` from dist/ set up by fixture.ts, and
 * this driver. Traffic (traffic.ts): authorize (allow, deny, review), settle, verify, gateway chat
 * completions to the mock (streamed and not), MCP tools/call through the proxy, console reads
 * (agents, pending approvals, ledger pages) and approvals decided in the console.
 *
 * Open loop: requests leave at evenly spaced times whatever the answers do (as independent agents
 * would send them), over a pool of keep-alive connections; each is timed from its planned
 * departure to the end of its answer, so a server that falls behind shows as latency, not as a
 * lower rate. Every minute: the server's RSS (anonymous and file-backed) from /proc, its V8 heap
 * through the inspector (inspector.ts; svc has no metrics route), the store file's size, the p99
 * of each kind, and the count of each status.
 *
 * It fails (exit 1), after printing everything, when:
 * - the server's RSS (median of the samples in the minute) grew more than SOAK_RSS_GROWTH (20%)
 *   from minute SOAK_BASELINE_MINUTE (5) to the last minute;
 * - any answer was a 5xx, any request ended in a connection error or a timeout;
 * - any answer was not what it should be (a 4xx, a wrong decision, a cut stream);
 * - the server logged at error level, exited during the run, did not exit 0 on SIGTERM, or its
 *   ledger does not verify afterwards (`svc ledger verify`);
 * - the vendor or the upstream did not receive every call answered as forwarded.
 *
 * Settings (environment): SOAK_MINUTES (20), SOAK_RATE (requests/s, 50), SOAK_BASELINE_MINUTE
 * (5), SOAK_RSS_GROWTH (0.2), SOAK_CONNECTIONS (64), SOAK_HEAP=0 (no inspector: RSS only),
 * SOAK_HEAP_SNAPSHOTS=dir (heap snapshots at the baseline minute and at the end, after a full GC),
 * SOAK_KEEP=1 (keep the data dir and print where it is), SOAK_LOAD_SHEDDING=1 (keep the shipped
 * load shedding; off by default, see fixture.ts).
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { call } from '../helpers/http.js';
import { cleanEnv, svc } from '../helpers/process.js';
import { startChild, watch, type Child } from '../bench/children.js';
import { CLK_TCK, cpuTicks, percentile } from '../bench/gateway-load.js';
import { GATE_PER_MINUTE, startSoakServer, UPSTREAM, type SoakServer } from './fixture.js';
import { connectInspector, inspectorUrl, type HeapUsage, type Inspector } from './inspector.js';
import { fileSize, mb, median, procMemory, type ProcMemory } from './memory.js';
import { createMix, GATE_SHARE, MIX, type Answer, type Outgoing } from './traffic.js';

const num = (name: string, fallback: number) => {
  const v = process.env[name];
  const n = v === undefined || v === '' ? fallback : Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, not ${v}`);
  return n;
};
const MINUTES = num('SOAK_MINUTES', 20);
const RATE = num('SOAK_RATE', 50);
const BASELINE = Math.min(num('SOAK_BASELINE_MINUTE', 5), Math.max(1, Math.ceil(MINUTES) - 1));
const RSS_GROWTH = num('SOAK_RSS_GROWTH', 0.2);
const CONNECTIONS = num('SOAK_CONNECTIONS', 64);
const HEAP = process.env.SOAK_HEAP !== '0';
const SNAPSHOTS = process.env.SOAK_HEAP_SNAPSHOTS ? resolve(process.env.SOAK_HEAP_SNAPSHOTS) : undefined;
const KEEP = process.env.SOAK_KEEP === '1';
const SHEDDING = process.env.SOAK_LOAD_SHEDDING === '1';
const SAMPLE_MS = 5000;
/**
 * Past this many requests unanswered, a request due is not sent but counted: a server that falls
 * behind the offered rate (on a shared machine, one that does not get its share of a CPU) would
 * otherwise queue an ever longer backlog in this driver, and every latency after that would be
 * the backlog's.
 */
const MAX_IN_FLIGHT = CONNECTIONS * 2;
const TIMEOUT_MS = 30_000;
// The drain's own limit (server.shutdownTimeoutMs) is 10 s.
const STOP_MS = 30_000;
const WARMUP_REQUESTS = 120;
// Each agent at most half its gate limit, so that only a real fault answers 429.
const AGENTS = Math.max(4, Math.ceil((RATE * GATE_SHARE * 60) / (GATE_PER_MINUTE / 2)));

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');

interface Tally {
  times: number[];
  statuses: Map<string, number>;
}
const tally = (): Tally => ({ times: [], statuses: new Map() });
const count = (m: Map<string, number>, k: string, n = 1) => m.set(k, (m.get(k) ?? 0) + n);

interface Sample {
  at: number;
  proc: ProcMemory;
  heap?: HeapUsage;
  store: number;
}

/** The first answer of each kind of failure, to print beside the counts. */
const firstOf = new Map<string, string>();

async function send(pool: Pool, out: Outgoing): Promise<Answer> {
  try {
    const res = await pool.request({
      path: out.path,
      method: out.method,
      headers: out.headers,
      body: out.body ?? null,
      headersTimeout: TIMEOUT_MS,
      bodyTimeout: TIMEOUT_MS,
    });
    const text = await res.body.text();
    return { status: res.statusCode, contentType: String(res.headers['content-type'] ?? ''), text };
  } catch (err) {
    return { error: (err as { code?: string }).code ?? (err as Error).name };
  }
}

/** What an answer counts as: its status, `error CODE`, or `unexpected STATUS` when its body is wrong. */
function classify(out: Outgoing, answer: Answer): string {
  if ('error' in answer) {
    const key = `error ${answer.error}`;
    if (!firstOf.has(`${out.kind}: ${key}`)) firstOf.set(`${out.kind}: ${key}`, `${out.method} ${out.path}`);
    return key;
  }
  const why = answer.status >= 500 ? `status ${answer.status}` : out.judge(answer);
  if (why === undefined) return String(answer.status);
  const key = answer.status >= 500 ? String(answer.status) : `unexpected ${answer.status}`;
  // The first of each kind and reason (a few dozen at most), to print beside the counts.
  const what = `${out.kind}: ${key} (${why})`;
  if (!firstOf.has(what) && firstOf.size < 40)
    firstOf.set(what, `${out.method} ${out.path} -> ${answer.text.slice(0, 300)}`);
  return key;
}

const isOk = (key: string) => /^[23]\d\d$/.test(key);
/**
 * The server's own memory: its RSS less the resident pages of the store file it maps. Those are
 * the store's data in the page cache, which grow with the store by design (README, "The store")
 * and which the kernel reclaims at will; what a leak grows is the rest.
 */
const own = (s: Sample) => s.proc.rss - (s.proc.store ?? 0);

function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(x < 10 ? 1 : 0) : '-');
const statusText = (m: Map<string, number>) =>
  [...m]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, n]) => `${k}×${n}`)
    .join(' ');
const SHORT: Record<string, string> = {
  'authorize allow': 'allow',
  'authorize deny': 'deny',
  'authorize review': 'review',
  'mcp tools/call': 'mcp',
  'chat stream': 'stream',
  'console agents': 'agents',
  'console approvals': 'approvals',
  'console ledger': 'ledger',
  'console approve': 'approve',
};

async function main(): Promise<number> {
  console.log(
    `soak: ${MINUTES} min at ${RATE} req/s open loop over ${CONNECTIONS} connections, ${AGENTS} agents; ` +
      `fails on RSS growth over ${(RSS_GROWTH * 100).toFixed(0)}% from minute ${BASELINE} to the end, any 5xx, ` +
      `connection error or unexpected answer; Node ${process.version}`,
  );
  console.log(`machine: ${availableParallelism()} CPUs, load average ${load()} at start`);
  const root = await mkdtemp(join(tmpdir(), 'svc-soak-'));
  const dataDir = join(root, 'data');
  const stopping = { now: false };
  const children: Array<Child<{ listening: string }>> = [];
  let fx: SoakServer | undefined;
  let inspector: Inspector | undefined;
  const failures: string[] = [];
  try {
    const vendor = await startChild<{ listening: string; control: string }>(
      ['--import=tsx', here('../bench/mock-vendor-server.ts')],
      cleanEnv(),
    );
    children.push(vendor);
    const upstream = await startChild<{ listening: string; control: string }>(
      ['--import=tsx', here('../bench/mcp-upstream-server.ts'), UPSTREAM.secret],
      cleanEnv(),
    );
    children.push(upstream);
    let early = '';
    fx = await startSoakServer({
      dataDir,
      vendorUrl: vendor.url,
      upstreamUrl: upstream.url,
      agents: AGENTS,
      loadShedding: SHEDDING,
      nodeFlags: HEAP ? ['--inspect=127.0.0.1:0'] : [],
      onStderr: (text) => {
        if (early.length < 4096) early += text;
      },
    });
    const server = fx.server;
    const pid = server.child.pid!;
    const seen = watch('svc serve', server, stopping);
    if (HEAP) {
      const url = inspectorUrl(early);
      if (!url) throw new Error(`svc serve did not print its inspector address: ${early.slice(0, 500)}`);
      inspector = await connectInspector(url);
    }
    console.log(
      `svc serve pid ${pid} on ${server.url}; heap: ${HEAP ? 'V8 inspector (Runtime.getHeapUsage)' : 'not read (SOAK_HEAP=0): /proc only'}; data ${dataDir}\n`,
    );
    const counter = async (c: Child<{ listening: string; control: string }>) =>
      (await call(c.boot.control, 'GET', '/count')).body.count as number;
    const vendorBefore = await counter(vendor);
    const upstreamBefore = await counter(upstream);

    const pool = new Pool(new URL(server.url).origin, {
      connections: CONNECTIONS,
      pipelining: 1,
      keepAliveTimeout: 60_000,
    });
    const mix = createMix(fx);

    // Warm-up, one at a time: every kind must answer as it should before the clock starts.
    const forwarded = { chat: 0, mcp: 0 };
    const forwardedKind = (kind: string, key: string) => {
      if (!isOk(key)) return;
      if (kind.startsWith('chat')) forwarded.chat += 1;
      if (kind === 'mcp tools/call') forwarded.mcp += 1;
    };
    for (let i = 0; i < WARMUP_REQUESTS; i += 1) {
      const out = mix.next();
      const key = classify(out, await send(pool, out));
      forwardedKind(out.kind, key);
      if (!isOk(key)) throw new Error(`warm-up: ${out.kind} answered ${key}: ${[...firstOf.values()].pop()}`);
    }

    const total = new Map(MIX.map((m) => [m.kind, tally()]));
    const minutes: Array<Map<string, Tally>> = [];
    const samples: Sample[] = [];
    const gcHeap: Array<{ minute: number; heap: HeapUsage; rss: number }> = [];
    const storeFile = join(dataDir, 'svc.mdb');
    const pids = { 'svc serve': pid, 'mock vendor': vendor.child.pid!, 'upstream MCP': upstream.child.pid! };
    const ticksBefore = Object.values(pids).map(cpuTicks);
    const driverBefore = process.cpuUsage();
    const start = performance.now();
    const end = start + MINUTES * 60_000;
    const minuteOf = (t: number) => Math.floor((t - start) / 60_000);
    let inFlight = 0;
    let sent = 0;
    // Slots of the schedule not sent because the server was behind, by the minute they were due.
    const skipped: number[] = [];
    const pending = new Set<Promise<void>>();

    const dispatch = (due: number) => {
      const out = mix.next();
      inFlight += 1;
      const p = send(pool, out).then((answer) => {
        const done = performance.now();
        inFlight -= 1;
        const key = classify(out, answer);
        forwardedKind(out.kind, key);
        // Answers that arrive after the end count in the last minute.
        const m = Math.min(minuteOf(done), Math.ceil(MINUTES) - 1);
        const perMinute = (minutes[m] ??= new Map());
        const mt = perMinute.get(out.kind) ?? tally();
        perMinute.set(out.kind, mt);
        const tt = total.get(out.kind)!;
        count(mt.statuses, key);
        count(tt.statuses, key);
        if (isOk(key)) {
          mt.times.push(done - due);
          tt.times.push(done - due);
        }
      });
      pending.add(p);
      void p.finally(() => pending.delete(p));
    };

    const sample = async (): Promise<Sample | undefined> => {
      const proc = procMemory(pid, storeFile);
      if (!proc) return undefined;
      let heap: HeapUsage | undefined;
      try {
        heap = inspector ? await inspector.heap() : undefined;
      } catch (err) {
        failures.push(`the inspector stopped answering: ${(err as Error).message}`);
        inspector = undefined;
      }
      const s = { at: performance.now(), proc, ...(heap ? { heap } : {}), store: fileSize(storeFile).length };
      samples.push(s);
      return s;
    };

    const afterGc = async (minute: number, label: string) => {
      if (!inspector) return;
      try {
        const heap = await inspector.heapAfterGc();
        gcHeap.push({ minute, heap, rss: procMemory(pid)?.rss ?? NaN });
        if (SNAPSHOTS) {
          await mkdir(SNAPSHOTS, { recursive: true });
          const file = join(SNAPSHOTS, `svc-${label}.heapsnapshot`);
          await inspector.snapshot(file);
          console.log(`  heap snapshot: ${file}`);
        }
      } catch (err) {
        failures.push(`the inspector stopped answering: ${(err as Error).message}`);
        inspector = undefined;
      }
    };

    const windowOf = (m: number) => samples.filter((s) => minuteOf(s.at) === m - 1);
    const printMinute = (m: number) => {
      const stats = minutes[m - 1] ?? new Map<string, Tally>();
      const last = windowOf(m).at(-1) ?? samples.at(-1);
      const statuses = new Map<string, number>();
      let answered = 0;
      for (const t of stats.values())
        for (const [k, n] of t.statuses) {
          count(statuses, k, n);
          answered += n;
        }
      const p99s = MIX.map(({ kind }) => {
        const times = [...(stats.get(kind)?.times ?? [])].sort((a, b) => a - b);
        return `${SHORT[kind] ?? kind} ${ms(percentile(times, 99))}`;
      }).join(', ');
      const heap = last?.heap ? `, heap ${mb(last.heap.used)}/${mb(last.heap.total)} MB` : '';
      console.log(
        `minute ${String(m).padStart(2)}: ${(answered / 60).toFixed(1)} answers/s, in flight ${inFlight}` +
          `${skipped[m - 1] ? `, ${skipped[m - 1]} not sent (the server was behind)` : ''}; ` +
          `RSS ${last ? mb(last.proc.rss) : '-'} MB (${last ? mb(own(last)) : '-'} without the store's mapped pages; anon ${last ? mb(last.proc.anon) : '-'})${heap}; ` +
          `store ${last ? mb(last.store) : '-'} MB; load ${load()}\n` +
          `  p99 ms: ${p99s}\n  statuses: ${statusText(statuses)}`,
      );
    };

    await sample();
    let nextSample = start + SAMPLE_MS;
    let nextMinute = 1;
    let sampling: Promise<unknown> = Promise.resolve();
    while (performance.now() < end && server.child.exitCode === null && server.child.signalCode === null) {
      const now = performance.now();
      const due = Math.min(Math.floor(((now - start) / 1000) * RATE), Math.floor(MINUTES * 60 * RATE));
      for (; sent < due; sent += 1) {
        const at = start + (sent * 1000) / RATE;
        if (inFlight < MAX_IN_FLIGHT) dispatch(at);
        else skipped[minuteOf(at)] = (skipped[minuteOf(at)] ?? 0) + 1;
      }
      if (now >= nextSample) {
        nextSample += SAMPLE_MS;
        sampling = sampling.then(sample);
      }
      if (now >= start + nextMinute * 60_000 && now < end) {
        const m = nextMinute++;
        sampling = sampling.then(async () => {
          printMinute(m);
          if (m === BASELINE) await afterGc(m, `minute-${m}`);
        });
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    // The last requests finish (each has its own deadline), then the last minute is printed.
    await Promise.all(pending);
    await sampling;
    await sample();
    printMinute(Math.ceil(MINUTES));
    const seconds = (performance.now() - start) / 1000;
    const cpu = Object.keys(pids).map((name, i) => [
      name,
      (cpuTicks(Object.values(pids)[i]) - ticksBefore[i]!) / CLK_TCK,
    ]);
    const driver = process.cpuUsage(driverBefore);
    cpu.push(['this driver', (driver.user + driver.system) / 1e6]);
    await afterGc(Math.ceil(MINUTES), 'end');
    await pool.close();

    // What the mock vendor and the upstream received, against what was answered as forwarded.
    const vendorGot = (await counter(vendor)) - vendorBefore;
    const upstreamGot = (await counter(upstream)) - upstreamBefore;
    if (vendorGot < forwarded.chat)
      failures.push(`the vendor received ${vendorGot} calls for ${forwarded.chat} completions answered`);
    if (upstreamGot !== forwarded.mcp)
      failures.push(`the upstream ran ${upstreamGot} tool calls for ${forwarded.mcp} answered`);

    // The server drains and exits 0 on SIGTERM; then its ledger must verify, every record of it.
    stopping.now = true;
    const died = server.child.exitCode !== null || server.child.signalCode !== null;
    inspector?.close();
    inspector = undefined;
    let timer: NodeJS.Timeout | undefined;
    const exited = await Promise.race([
      server.stop().then(() => true),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(false), STOP_MS))),
    ]);
    clearTimeout(timer);
    if (died) failures.push(`svc serve exited during the run (code ${server.child.exitCode})`);
    else if (!exited) {
      failures.push(`svc serve was still running ${STOP_MS / 1000} s after SIGTERM (killed)`);
      server.child.kill('SIGKILL');
      await server.stop();
    } else if (server.child.exitCode !== 0)
      failures.push(`svc serve exited ${server.child.exitCode ?? server.child.signalCode} on SIGTERM, not 0`);
    const verified = await svc(['ledger', 'verify', '--data-dir', dataDir, '--json'], { timeoutMs: 600_000 });
    if (verified.code !== 0)
      failures.push(`svc ledger verify exited ${verified.code}: ${verified.stdout.slice(0, 300)}`);
    const ledgers = verified.code === 0 ? (JSON.parse(verified.stdout).ledgers as Array<{ size?: number }>) : [];

    // The report.
    const notSent = skipped.reduce((a, b) => a + (b ?? 0), 0);
    const answeredAll = [...total.values()].reduce(
      (n, t) => n + [...t.statuses.values()].reduce((a, b) => a + b, 0),
      0,
    );
    console.log(
      `\nload average ${load()} at the end; ${sent} requests due in ${MINUTES} min (${RATE}/s offered), ` +
        `${answeredAll} answered (${(answeredAll / seconds).toFixed(1)}/s)` +
        (notSent > 0
          ? `; ${notSent} (${((notSent / sent) * 100).toFixed(1)}%) not sent: the server was behind by ${MAX_IN_FLIGHT} requests`
          : ''),
    );
    console.log("\nPer kind (latency from each request's planned departure to the end of its answer; 2xx only):\n");
    const rows = MIX.map(({ kind }) => {
      const t = total.get(kind)!;
      const times = [...t.times].sort((a, b) => a - b);
      const n = [...t.statuses.values()].reduce((a, b) => a + b, 0);
      return [
        kind,
        String(n),
        ms(percentile(times, 50)),
        ms(percentile(times, 99)),
        ms(percentile(times, 99.9)),
        ms(times.at(-1) ?? NaN),
        statusText(t.statuses),
      ];
    });
    console.log(table(['kind', 'answers', 'p50 ms', 'p99 ms', 'p99.9 ms', 'max ms', 'statuses'], rows));

    console.log('\nMemory and store per minute (medians of the 5 s samples in each minute):\n');
    const memRows: string[][] = [];
    for (let m = 1; m <= Math.ceil(MINUTES); m += 1) {
      const w = windowOf(m);
      if (w.length === 0) continue;
      const med = (f: (s: Sample) => number | undefined) => {
        const xs = w.map(f).filter((x): x is number => x !== undefined);
        return xs.length === 0 ? '-' : mb(median(xs));
      };
      memRows.push([
        String(m),
        med((s) => s.proc.rss),
        med(own),
        med((s) => s.proc.anon),
        med((s) => s.proc.store),
        med((s) => s.heap?.used),
        med((s) => s.heap?.total),
        med((s) => s.store),
      ]);
    }
    console.log(
      table(
        [
          'minute',
          'RSS MB',
          'RSS less store MB',
          'anon MB',
          'store mapped MB',
          'heap used MB',
          'heap total MB',
          'store file MB',
        ],
        memRows,
      ),
    );
    for (const g of gcHeap)
      console.log(`after a full GC at minute ${g.minute}: heap ${mb(g.heap.used)} MB used, RSS ${mb(g.rss)} MB`);
    const peak = samples.at(-1)?.proc.peak;
    if (peak !== undefined) console.log(`peak RSS (VmHWM): ${mb(peak)} MB`);
    console.log(
      `CPU over the run (${seconds.toFixed(0)} s): ${cpu.map(([name, s]) => `${name} ${Number(s).toFixed(0)} s (${((Number(s) / seconds) * 100).toFixed(0)}% of a core)`).join(', ')}`,
    );
    if (ledgers.length > 0)
      console.log(`ledger verified (svc ledger verify): ${ledgers.map((l) => l.size).join(', ')} records`);

    // Verdicts.
    const rssAt = (m: number) => median(windowOf(m).map(own));
    const totalAt = (m: number) => median(windowOf(m).map((s) => s.proc.rss));
    const base = rssAt(BASELINE);
    const last = rssAt(Math.ceil(MINUTES));
    const growth = (last - base) / base;
    const lastMinute = Math.ceil(MINUTES);
    const totalGrowth = (totalAt(lastMinute) - totalAt(BASELINE)) / totalAt(BASELINE);
    console.log(
      `\nRSS less the store's mapped pages: ${mb(base)} MB at minute ${BASELINE}, ${mb(last)} MB at minute ${lastMinute}: ` +
        `${(growth * 100).toFixed(1)}% (limit ${(RSS_GROWTH * 100).toFixed(0)}%); ` +
        `whole RSS ${mb(totalAt(BASELINE))} -> ${mb(totalAt(lastMinute))} MB (${(totalGrowth * 100).toFixed(1)}%)`,
    );
    if (!(growth <= RSS_GROWTH))
      failures.push(`RSS (less the store's mapped pages) grew ${(growth * 100).toFixed(1)}% from minute ${BASELINE}`);
    const bad = new Map<string, number>();
    for (const t of total.values()) for (const [k, n] of t.statuses) if (!isOk(k)) count(bad, k, n);
    if (bad.size > 0) failures.push(`answers that were not as they should be: ${statusText(bad)}`);
    for (const [what, first] of firstOf) console.log(`  first ${what}: ${first}`);
    if (seen.errors > 0) {
      failures.push(`svc logged ${seen.errors} error-level lines`);
      for (const line of seen.firstErrors) console.log(`  ${line}`);
    }
    if (notSent > 0)
      console.log(
        `\nNOTE: the offered rate was not sustained (${notSent} requests not sent; see "CPU over the run"): ` +
          'memory and errors were soaked at the rate the server reached, and latencies include waiting for a connection.',
      );
    if (failures.length > 0) {
      console.log(`\nFAIL:\n${failures.map((f) => `- ${f}`).join('\n')}`);
      return 1;
    }
    console.log('\nOK');
    return 0;
  } finally {
    stopping.now = true;
    inspector?.close();
    await fx?.server.stop();
    for (const c of children) await c.stop();
    if (KEEP) console.log(`data kept in ${dataDir}`);
    else await rm(root, { recursive: true, force: true });
  }
}

process.exitCode = await main();
