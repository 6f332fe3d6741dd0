/**
 * Benchmark: what the product's request pipeline, guards, authentication and durable writes cost
 * over a bare hapi route.
 *
 * Three processes, so that no two share an event loop or a JIT: the real `svc serve` binary as an
 * operator runs it (dist/, info-level request logs to a pipe), a bare hapi server (bare-server.ts)
 * answering the same kind of body, and this process driving both with autocannon on 127.0.0.1,
 * same connections, same seconds, after a warm-up each, in alternating rounds (load.ts).
 *
 * - whoami: GET /v1/whoami with a workspace key, against GET /bare answering the same bytes.
 * - authorize: POST /v1/actions/authorize with an agent key, an allowed payment (no idempotency
 *   key): each request signs a receipt, stores the action and a ledger record, and flushes to
 *   disk before answering; against POST /bare/echo with the same request body and an answer of
 *   the same size. Also its latency at a fixed offered rate.
 * - verify: POST /v1/verify with one receipt again and again (after the first check each answer
 *   says `replayed: true`), against POST /bare/echo likewise.
 *
 * Prints every route's requests/s, p50 and p99, then each goal as PASS or BELOW (a measurement: a
 * goal below is reported, not a failure). Exits 1 when any request failed (not 2xx, connection error, timeout), after printing all.
 * BENCH_CPU_PROF_DIR=dir: the svc servers run with --cpu-prof and write their profiles there.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN, cleanEnv, svc } from '../helpers/process.js';
import { startChild, type Child } from './children.js';
import { BENCH_PAYMENT, gateFixture, type ServeBoot } from './gate-fixture.js';
import { badCount, measureAtRate, measureBoth, type Measured, type Shape, type Target } from './load.js';
import { cpuGoal, goalsTable, latencyGoal, ratioGoal, routesTable, type Goal } from './report.js';

/** Rounds long enough that connection setup is not what is measured. */
const SHAPE: Shape = { connections: 32, warmupSeconds: 1, roundSeconds: 3, rounds: 4 };
// Issue 23's goals: ratios to bare hapi in the same run, server CPU per request, p99 at a rate.
const GOALS = {
  whoami: 0.7,
  authorize: 0.4,
  authorizeCpuMicros: 400,
  verify: 0.6,
  fixedRate: { rate: 1000, connections: 64, seconds: 5, maxP50: null, maxP99: 15 },
};
const UNLIMITED = '100000000';

const profileDir = process.env.BENCH_CPU_PROF_DIR;
const nodeFlags = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${resolve(profileDir)}`] : [];

interface Results {
  rows: Array<{ benchmark: string; m: Measured }>;
  goals: Goal[];
}

/** A workspace key made with `svc init` and `svc keys create --local`, as the first benchmark always did. */
async function whoami(
  startBare: (body: string) => Promise<Child<{ listening: string }>>,
  out: Results,
): Promise<Child<{ listening: string }>> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-'));
  let server: Child<ServeBoot> | undefined;
  try {
    const init = await svc(
      [
        'init',
        '--data-dir',
        dataDir,
        '--workspace',
        'Bench',
        '--owner-email',
        'bench@localhost',
        '--owner-password-stdin',
      ],
      { input: 'bench password 0123' },
    );
    if (init.code !== 0) throw new Error(`svc init failed: ${init.stderr}`);
    const minted = await svc([
      'keys',
      'create',
      '--scope',
      'inference',
      '--name',
      'bench',
      '--local',
      '--data-dir',
      dataDir,
      '--json',
    ]);
    if (minted.code !== 0) throw new Error(`svc keys create failed: ${minted.stderr}${minted.stdout}`);
    const { key } = JSON.parse(minted.stdout) as { key: string };

    const env = cleanEnv({ SVC_LOG_LEVEL: 'info', SVC_PUBLIC_RATE_PER_MINUTE: '1000000000' });
    server = await startChild<ServeBoot>(
      [...nodeFlags, BIN, 'serve', '--json', '--data-dir', dataDir, '--port', '0'],
      env,
    );
    const url = `${server.url}/v1/whoami`;
    const check = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
    if (check.status !== 200) throw new Error(`GET /v1/whoami answered ${check.status}: ${await check.text()}`);
    // The bare route answers exactly the bytes /v1/whoami answers for this key.
    const bare = await startBare(await check.text());

    const [product, baseline] = await measureBoth(
      {
        name: 'GET /v1/whoami (svc, key auth)',
        url,
        headers: { authorization: `Bearer ${key}` },
        pid: server.child.pid!,
      },
      { name: 'GET /bare (bare hapi)', url: `${bare.url}/bare` },
      SHAPE,
    );
    out.rows.push({ benchmark: 'whoami', m: product }, { benchmark: 'whoami', m: baseline });
    out.goals.push(ratioGoal('whoami', product, baseline, GOALS.whoami));
    return bare;
  } finally {
    await server?.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** A first-start server, its owner, an agent with a mandate and a key, all through the product. */
async function gate(bare: Child<{ listening: string }>, out: Results): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-gate-'));
  let server: Child<ServeBoot> | undefined;
  try {
    const env = cleanEnv({
      SVC_LOG_LEVEL: 'info',
      SVC_GATE_RATE_PER_MINUTE: UNLIMITED,
      SVC_PUBLIC_RATE_PER_MINUTE: UNLIMITED,
    });
    server = await startChild<ServeBoot>(
      [...nodeFlags, BIN, 'serve', '--json', '--data-dir', dataDir, '--port', '0'],
      env,
    );
    const fx = await gateFixture(server);

    const authorizeBody = JSON.stringify(BENCH_PAYMENT);
    const authorize: Target = {
      name: 'POST /v1/actions/authorize (svc, allow)',
      url: `${server.url}/v1/actions/authorize`,
      method: 'POST',
      headers: { authorization: `Bearer ${fx.key}` },
      body: authorizeBody,
      pid: server.child.pid!,
    };
    const authorizeBare: Target = {
      name: 'POST /bare/echo (bare hapi)',
      url: `${bare.url}/bare/echo?size=${Buffer.byteLength(fx.authorizeAnswer)}`,
      method: 'POST',
      body: authorizeBody,
    };
    const [product, baseline] = await measureBoth(authorize, authorizeBare, SHAPE);
    out.rows.push({ benchmark: 'authorize', m: product }, { benchmark: 'authorize', m: baseline });
    out.goals.push(ratioGoal('authorize', product, baseline, GOALS.authorize));
    out.goals.push(cpuGoal('authorize', product, baseline, GOALS.authorizeCpuMicros));

    const { rate, connections, seconds, maxP50, maxP99 } = GOALS.fixedRate;
    const label = `authorize @${rate}/s`;
    const atRate = await measureAtRate(authorize, rate, connections, seconds);
    const bareAtRate = await measureAtRate(authorizeBare, rate, connections, seconds);
    out.rows.push({ benchmark: label, m: atRate }, { benchmark: label, m: bareAtRate });
    out.goals.push(latencyGoal(label, atRate, rate, maxP50, maxP99, bareAtRate));

    const verifyBody = JSON.stringify({ receipt: fx.receipt });
    const [verified, verifyBaseline] = await measureBoth(
      {
        name: 'POST /v1/verify (svc, replayed)',
        url: `${server.url}/v1/verify`,
        method: 'POST',
        body: verifyBody,
        pid: server.child.pid!,
      },
      {
        name: 'POST /bare/echo (bare hapi)',
        url: `${bare.url}/bare/echo?size=${Buffer.byteLength(fx.verifyAnswer)}`,
        method: 'POST',
        body: verifyBody,
      },
      SHAPE,
    );
    out.rows.push({ benchmark: 'verify', m: verified }, { benchmark: 'verify', m: verifyBaseline });
    out.goals.push(ratioGoal('verify', verified, verifyBaseline, GOALS.verify));
  } finally {
    await server?.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');

async function main(): Promise<number> {
  const bareScript = fileURLToPath(new URL('./bare-server.ts', import.meta.url));
  let bare: Child<{ listening: string }> | undefined;
  const startBare = async (body: string) => (bare = await startChild(['--import=tsx', bareScript, body], cleanEnv()));
  const out: Results = { rows: [], goals: [] };
  const { connections, warmupSeconds, roundSeconds, rounds } = SHAPE;
  const { rate, connections: rateConnections, seconds } = GOALS.fixedRate;
  console.log(
    `autocannon: ${connections} connections, ${warmupSeconds} s warm-up + ${rounds * roundSeconds} s each (alternating ${roundSeconds} s rounds; latency: median over rounds, whole ms), Node ${process.version}`,
  );
  console.log(
    `fixed rate: ${rate} req/s offered open loop (evenly spaced departures, up to ${rateConnections} connections), 1 s warm-up + ${seconds} s; latency of every answer from its own departure, sub-ms`,
  );
  console.log(
    'svc: the real binary (dist/), info-level request logs; bare: hapi, same kind of body; each its own process',
  );
  // The numbers are only as good as the machine is quiet, and the product's suffer most.
  console.log(`machine: ${availableParallelism()} CPUs, load average ${load()} at start\n`);
  try {
    await gate(await whoami(startBare, out), out);
  } finally {
    await bare?.stop();
  }

  console.log(`load average ${load()} at the end\n`);
  console.log(routesTable(out.rows));
  console.log('');
  console.log(goalsTable(out.goals));
  const failed = out.rows.reduce((n, { m }) => n + badCount(m.bad), 0);
  const missed = out.goals.filter((g) => !g.met);
  console.log('');
  if (missed.length > 0)
    console.log(`below goal (reported, not a failure): ${missed.map((g) => g.benchmark).join(', ')}`);
  if (failed > 0) {
    console.log(`FAIL: ${failed} requests were not answered 2xx (see "failed" above)`);
    return 1;
  }
  console.log('OK');
  return 0;
}

process.exitCode = await main();
