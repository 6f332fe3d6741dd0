/**
 * Benchmark: what the product's request pipeline, guards and key authentication cost over a bare
 * hapi route.
 *
 * Three processes, so that no two share an event loop or a JIT: the real `svc serve` binary as an
 * operator runs it (dist/, info-level request logs to a pipe), a bare hapi server answering the
 * same JSON bytes (bare-server.ts), and this process driving both with autocannon on 127.0.0.1:
 * same connections, same seconds, after a warm-up each, in alternating one-second rounds so that
 * whatever else the machine does lands on both alike. Prints requests/s, p50 and p99 latency for
 * each and their ratio; exits 1 when the authenticated route serves less than MIN_RATIO of the
 * bare route's requests/s.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { BIN, cleanEnv, svc } from '../helpers/process.js';

const CONNECTIONS = 32;
const DURATION_S = 12;
/** Seconds per alternating round: long enough that connection setup is not what is measured. */
const ROUND_S = 3;
const WARMUP_S = 1;
const MIN_RATIO = 0.7;

interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
}

/** What the load generator reports for one round. */
interface Round {
  duration: number;
  total: number;
  p50: number;
  p99: number;
  bad: number;
}

interface Measured {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  total: number;
  bad: number;
}

async function run(target: Target, seconds: number): Promise<Round> {
  const r = await autocannon({ url: target.url, connections: CONNECTIONS, duration: seconds, headers: target.headers });
  return { duration: r.duration, total: r.requests.total, p50: r.latency.p50, p99: r.latency.p99, bad: r.non2xx + r.errors + r.timeouts };
}

/** Starts a child that prints {"listening": url} on stdout; resolves with the url. */
function startChild(args: string[], env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stderr!.resume();
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      try {
        resolve({ child, url: (JSON.parse(out) as { listening: string }).listening });
      } catch { /* not complete yet */ }
    });
    child.on('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}: ${out}`)));
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * Both targets get the same connections and the same seconds. The seconds are taken in
 * alternating one-second rounds, so that whatever else the machine does lands on both alike.
 */
async function measureBoth(a: Target, b: Target): Promise<[Measured, Measured]> {
  await run(a, WARMUP_S);
  await run(b, WARMUP_S);
  const rounds: [Round[], Round[]] = [[], []];
  for (let i = 0; i < DURATION_S / ROUND_S; i += 1) {
    rounds[0].push(await run(a, ROUND_S));
    rounds[1].push(await run(b, ROUND_S));
  }
  const sum = (results: Round[]): Measured => ({
    name: '',
    rps: results.reduce((n, r) => n + r.total, 0) / results.reduce((n, r) => n + r.duration, 0),
    p50: median(results.map((r) => r.p50)),
    p99: median(results.map((r) => r.p99)),
    total: results.reduce((n, r) => n + r.total, 0),
    bad: results.reduce((n, r) => n + r.bad, 0),
  });
  return [{ ...sum(rounds[0]), name: a.name }, { ...sum(rounds[1]), name: b.name }];
}

function table(rows: Measured[]): string {
  const head = ['route', 'req/s', 'p50 ms', 'p99 ms', 'requests', 'non-2xx/errors'];
  const body = rows.map((m) => [m.name, m.rps.toFixed(0), m.p50.toFixed(1), m.p99.toFixed(1), String(m.total), String(m.bad)]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

async function main(): Promise<number> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-'));
  const children: ChildProcess[] = [];
  try {
    const init = await svc(['init', '--data-dir', dataDir, '--workspace', 'Bench', '--owner-email', 'bench@localhost', '--owner-password-stdin'], { input: 'bench password 0123' });
    if (init.code !== 0) throw new Error(`svc init failed: ${init.stderr}`);
    const minted = await svc(['keys', 'create', '--scope', 'inference', '--name', 'bench', '--local', '--data-dir', dataDir, '--json']);
    if (minted.code !== 0) throw new Error(`svc keys create failed: ${minted.stderr}${minted.stdout}`);
    const { key } = JSON.parse(minted.stdout) as { key: string };

    const env = cleanEnv({ SVC_LOG_LEVEL: 'info', SVC_PUBLIC_RATE_PER_MINUTE: '1000000000' });
    const svcServer = await startChild([BIN, 'serve', '--json', '--data-dir', dataDir, '--port', '0'], env);
    children.push(svcServer.child);
    const whoamiUrl = `${svcServer.url}/v1/whoami`;
    const check = await fetch(whoamiUrl, { headers: { authorization: `Bearer ${key}` } });
    if (check.status !== 200) throw new Error(`GET /v1/whoami answered ${check.status}: ${await check.text()}`);
    const body = await check.text();

    // The bare route answers exactly the bytes /v1/whoami answers for this key.
    const bareScript = fileURLToPath(new URL('./bare-server.ts', import.meta.url));
    const bare = await startChild(['--import=tsx', bareScript, body], env);
    children.push(bare.child);

    console.log(`autocannon: ${CONNECTIONS} connections, ${WARMUP_S} s warm-up + ${DURATION_S} s each (alternating ${ROUND_S} s rounds; latency: median over rounds), Node ${process.version}`);
    console.log('svc: the real binary (dist/), info-level request logs; bare: hapi with one route, same body; each its own process\n');
    const [authed, plain] = await measureBoth(
      { name: 'GET /v1/whoami (svc, key auth)', url: whoamiUrl, headers: { authorization: `Bearer ${key}` } },
      { name: 'GET /bare (bare hapi)', url: `${bare.url}/bare`, headers: {} },
    );
    const ratio = authed.rps / plain.rps;

    console.log(table([authed, plain]));
    console.log(`\nratio authenticated/bare (req/s): ${ratio.toFixed(2)} (minimum ${MIN_RATIO})`);
    if (authed.bad > 0 || plain.bad > 0) {
      console.log('FAIL: some requests were not answered 2xx');
      return 1;
    }
    if (ratio < MIN_RATIO) {
      console.log(`FAIL: the authenticated route serves ${(ratio * 100).toFixed(0)}% of the bare route's throughput`);
      return 1;
    }
    console.log('OK');
    return 0;
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : undefined)));
    await rm(dataDir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
