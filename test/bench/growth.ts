/**
 * Store growth (`npm run bench:growth`): the bytes a fresh store gains per allowed decision, per
 * deny, per settlement, per first verification of a receipt, per gateway call (plain and
 * streamed) and per proxied MCP tool call; then the reclaim procedure the README gives, carried
 * out and checked.
 *
 * The server is the soak's (test/soak/fixture.ts: `svc serve` from dist/, the gateway over the
 * mock vendor with every feature on, agents with mandates, the upstream MCP server). Each phase
 * sends GROWTH_N requests of one kind (8 at a time; every answer judged as the soak judges it),
 * then waits until the store is quiet (queued call records flushed, the ledger's checkpoint
 * signed), and reads:
 * - the store file's length (what the disk holds; LMDB never shrinks its file);
 * - the store's pages, read from the file by LMDB itself (read-only, beside the running server):
 *   per table, entries and bytes in B-tree pages (branch, leaf, overflow). Their sum is what a
 *   compacted copy holds.
 * Each figure is the phase's difference divided by its requests. Checkpoints (one signed note per
 * second of traffic at most, or per 1,000 records) land in whichever phase was running.
 *
 * Reclaim, at the end, as the README says: stop the server; `svc backup` to a new file in the data
 * dir; move the store aside and the copy in its place (and the lock file away); start the server;
 * check that an agent's key still decides, that the console lists the same agents, and that
 * `svc ledger verify` passes over the same records plus the new one.
 * Exits 1 if any request failed or any check of the restore failed.
 */
import { statSync } from 'node:fs';
import { mkdtemp, rename, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { open, type RootDatabase } from 'lmdb';
import { Pool } from 'undici';
import { tableNames } from '../../src/store/tables.js';
import { bearer, call } from '../helpers/http.js';
import { BIN, cleanEnv, svc } from '../helpers/process.js';
import { startChild, type Child } from './children.js';
import { VENDOR_ENV } from './gateway-fixture.js';
import { startSoakServer, UPSTREAM, type SoakServer } from '../soak/fixture.js';
import { createMix, type Outgoing } from '../soak/traffic.js';

const N = Number(process.env.GROWTH_N ?? 2000);
const CONCURRENCY = 8;
/** Longer than the call records' flush (1 s) and the ledger's checkpoint interval (1 s). */
const QUIET_MS = 3000;
const STORE_FILE = 'svc.mdb';

const PHASES: Array<{ kind: string; label: string }> = [
  { kind: 'authorize allow', label: 'allowed decision (authorize: action, receipt, ledger record)' },
  { kind: 'authorize deny', label: 'denied decision (authorize: action, ledger record)' },
  { kind: 'settle', label: 'settlement of an allowed action' },
  { kind: 'verify', label: 'first verification of a receipt (POST /v1/verify)' },
  { kind: 'chat', label: 'gateway call (chat completion)' },
  { kind: 'chat stream', label: 'gateway call, streamed' },
  { kind: 'mcp tools/call', label: 'MCP tools/call through the proxy (a gated action)' },
];

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Snapshot {
  fileLength: number;
  /** Per table: entries and bytes of its pages. */
  tables: Map<string, { entries: number; bytes: number }>;
  /** Every table's pages, and LMDB's own (the main database's) pages. */
  liveBytes: number;
}

interface DbStats {
  pageSize: number;
  treeBranchPageCount: number;
  treeLeafPageCount: number;
  overflowPages: number;
  entryCount: number;
  root?: DbStats;
}

/** The store as LMDB sees it, read-only in this process beside the running server. */
function snapshot(env: RootDatabase, storeFile: string): Snapshot {
  env.resetReadTxn();
  const tables = new Map<string, { entries: number; bytes: number }>();
  let liveBytes = 0;
  const bytesOf = (s: DbStats) => (s.treeBranchPageCount + s.treeLeafPageCount + s.overflowPages) * s.pageSize;
  for (const name of tableNames) {
    const stats = env.openDB({ name }).getStats() as DbStats;
    tables.set(name, { entries: stats.entryCount, bytes: bytesOf(stats) });
    liveBytes += bytesOf(stats);
  }
  liveBytes += bytesOf((env.getStats() as DbStats).root!);
  return { fileLength: statSync(storeFile).size, tables, liveBytes };
}

async function drive(pool: Pool, make: () => Outgoing, kind: string, n: number): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < n) {
      next += 1;
      const out = make();
      if (out.kind !== kind) throw new Error(`${kind}: nothing to ${kind} yet (the mix sent ${out.kind} instead)`);
      const res = await pool.request({
        path: out.path,
        method: out.method,
        headers: out.headers,
        body: out.body ?? null,
      });
      const text = await res.body.text();
      const why = out.judge({ status: res.statusCode, contentType: String(res.headers['content-type'] ?? ''), text });
      if (why !== undefined) throw new Error(`${kind}: ${why}: ${text.slice(0, 300)}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
}

function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

const perOp = (bytes: number, n: number) => `${Math.round(bytes / n).toLocaleString('en-US')}`;
const mb = (bytes: number) => `${(bytes / 1048576).toFixed(2)} MB`;

async function main(): Promise<number> {
  const root = await mkdtemp(join(tmpdir(), 'svc-growth-'));
  const dataDir = join(root, 'data');
  const storeFile = join(dataDir, STORE_FILE);
  const children: Array<Child<{ listening: string }>> = [];
  let fx: SoakServer | undefined;
  let env: RootDatabase | undefined;
  const problems: string[] = [];
  console.log(
    `store growth: ${N} requests of each kind on a fresh store, ${CONCURRENCY} at a time; Node ${process.version}, ` +
      `${availableParallelism()} CPUs, load average ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}\n`,
  );
  try {
    const vendor = await startChild<{ listening: string; control: string }>(
      ['--import=tsx', here('./mock-vendor-server.ts')],
      cleanEnv(),
    );
    children.push(vendor);
    const upstream = await startChild<{ listening: string; control: string }>(
      ['--import=tsx', here('./mcp-upstream-server.ts'), UPSTREAM.secret],
      cleanEnv(),
    );
    children.push(upstream);
    fx = await startSoakServer({
      dataDir,
      vendorUrl: vendor.url,
      upstreamUrl: upstream.url,
      agents: 4,
      // Sent as fast as the server answers: neither the gate's per-agent limit nor load shedding
      // on a busy machine may refuse what this measurement only needs served.
      unlimitedGate: true,
      loadShedding: false,
    });
    // The same environment settings as the product's (src/store/lmdb.ts), read-only.
    env = open({ path: storeFile, maxDbs: 64, readOnly: true, cache: false, compression: false });
    const pool = new Pool(new URL(fx.server.url).origin, { connections: CONCURRENCY, pipelining: 1 });
    const mix = createMix(fx);

    await sleep(QUIET_MS);
    const start = snapshot(env, storeFile);
    console.log(`fresh store after setup: file ${mb(start.fileLength)}, pages ${mb(start.liveBytes)}\n`);
    const rows: string[][] = [];
    const breakdown: string[] = [];
    let before = start;
    for (const phase of PHASES) {
      await drive(pool, () => mix.make(phase.kind), phase.kind, N);
      await sleep(QUIET_MS);
      const after = snapshot(env, storeFile);
      rows.push([
        phase.label,
        perOp(after.liveBytes - before.liveBytes, N),
        perOp(after.fileLength - before.fileLength, N),
      ]);
      const grew = [...after.tables]
        .map(([name, t]) => {
          const b = before.tables.get(name)!;
          return { name, entries: t.entries - b.entries, bytes: t.bytes - b.bytes };
        })
        .filter((d) => d.entries !== 0 || d.bytes !== 0)
        .sort((x, y) => y.bytes - x.bytes)
        .map((d) => `${d.name} ${d.entries >= 0 ? '+' : ''}${d.entries} (${perOp(d.bytes, N)} B/op)`);
      breakdown.push(`${phase.kind}: ${grew.join(', ')}`);
      before = after;
    }
    await pool.close();

    console.log(table(['per request', 'bytes of pages (live data)', 'bytes of file (disk)'], rows));
    console.log('\nTables that changed in each phase (entries added; bytes of pages per request):');
    for (const line of breakdown) console.log(`- ${line}`);
    console.log(`\nafter ${PHASES.length * N} requests: file ${mb(before.fileLength)}, pages ${mb(before.liveBytes)}`);

    // Reclaim: a compacted copy swapped in while the server is stopped.
    await env.close();
    env = undefined;
    const ledgerBefore = await svc(['ledger', 'verify', '--data-dir', dataDir, '--json']);
    const recordsBefore = (JSON.parse(ledgerBefore.stdout).ledgers as Array<{ size: number }>)[0]!.size;
    await fx.server.stop();
    if (fx.server.child.exitCode !== 0) problems.push(`svc serve exited ${fx.server.child.exitCode} on SIGTERM`);
    const copy = join(dataDir, 'svc.compact.mdb');
    const backup = await svc(['backup', '--data-dir', dataDir, '--out', copy, '--json'], { timeoutMs: 300_000 });
    if (backup.code !== 0) throw new Error(`svc backup exited ${backup.code}: ${backup.stderr}`);
    const compacted = statSync(copy).size;
    const original = statSync(storeFile).size;
    await rename(storeFile, join(dataDir, 'svc.mdb.old'));
    await rename(copy, storeFile);
    await rm(join(dataDir, `${STORE_FILE}-lock`), { force: true });
    const restarted = await startChild<{ listening: string }>(
      [
        BIN,
        'serve',
        '--json',
        '--data-dir',
        dataDir,
        '--host',
        '127.0.0.1',
        '--port',
        '0',
        '--config',
        join(dataDir, 'soak-config.json'),
      ],
      cleanEnv({ ...VENDOR_ENV, SVC_LOG_LEVEL: 'warn' }),
    );
    children.push(restarted);
    const decided = await call(restarted.url, 'POST', '/v1/actions/authorize', {
      headers: bearer(fx.agents[0]!.key),
      json: {
        type: 'payment',
        summary: 'after the restore',
        payment: { amount: 100, currency: 'EUR', merchant: 'acme.example' },
      },
    });
    if (decided.status !== 200 || decided.body.decision !== 'allow')
      problems.push(`after the restore, authorize answered ${decided.status} ${decided.text.slice(0, 200)}`);
    const agents = await call(restarted.url, 'GET', `/api/w/${fx.workspaceId}/agents`, {
      headers: { cookie: fx.cookie },
    });
    if (agents.status !== 200 || agents.body.data.length !== fx.agents.length)
      problems.push(`after the restore, the console answered ${agents.status} ${agents.text.slice(0, 200)}`);
    await restarted.stop();
    const ledgerAfter = await svc(['ledger', 'verify', '--data-dir', dataDir, '--json']);
    const recordsAfter =
      ledgerAfter.code === 0 ? (JSON.parse(ledgerAfter.stdout).ledgers as Array<{ size: number }>)[0]!.size : -1;
    if (recordsAfter !== recordsBefore + 1)
      problems.push(
        `after the restore, svc ledger verify exited ${ledgerAfter.code} with ${recordsAfter} records (before: ${recordsBefore})`,
      );
    console.log(
      `\nreclaim: file ${mb(original)} -> compacted copy ${mb(compacted)}; swapped in with the server stopped, ` +
        `restarted: an agent's key decides, the console lists the agents (session kept), ` +
        `svc ledger verify passes over ${recordsAfter} records (${recordsBefore} before, and the new decision)`,
    );
    if (problems.length > 0) {
      console.log(`\nFAIL:\n${problems.map((p) => `- ${p}`).join('\n')}`);
      return 1;
    }
    console.log('\nOK');
    return 0;
  } finally {
    await env?.close();
    await fx?.server.stop();
    for (const c of children) await c.stop();
    await rm(root, { recursive: true, force: true });
  }
}

process.exitCode = await main();
