import test, { type ExecutionContext } from 'ava';
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'undici';
import type { LedgerLease } from '../../src/ledger/records.js';
import { openStore, type Store } from '../../src/store/index.js';
import { createAgent, payment, type AgentFixture } from '../helpers/gate.js';
import { bearer } from '../helpers/http.js';
import { freshDatabase, storeUrlFor, type TestDatabase } from '../helpers/postgres.js';
import {
  killQuietly,
  removeDir,
  startServer,
  svc,
  tempDir,
  workersOf,
  type RunningServer,
} from '../helpers/process.js';
import { poll } from '../helpers/wait.js';
import { SERVER_ENV } from './suite.js';

/**
 * The ledger's integrator (src/ledger/integrate.ts, lease.ts) killed with SIGKILL under a decision
 * load, clients deciding all along: on `svc serve --workers 2` (one store; the worker that holds
 * the integrator lease is killed again and again, and replaced by the primary), and on two
 * `svc serve` instances on one PostgreSQL database (the instance that holds it is killed, then
 * started again). The lease moves to a living worker, decisions
 * go on (an append never waits on the integrator), and in the end every acknowledged
 * allow's record is integrated exactly once, the indices are dense, nothing is left waiting, and
 * `svc ledger verify` passes.
 */

const KILLS = Number(process.env.SVC_TEST_INTEGRATOR_KILLS ?? 4);
const EVERY_MS = 200;
const CONNECTION_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

const servers: RunningServer[] = [];
const stores: Store[] = [];
const databases: TestDatabase[] = [];
const dirs = new Set<string>();
const stop = { now: false };
test.after.always(async () => {
  stop.now = true;
  for (const s of stores) await s.close().catch(() => undefined);
  for (const server of servers) {
    const workers = server.proc.exitCode === null ? workersOf(server.proc.pid!) : [];
    server.proc.kill('SIGKILL');
    for (const pid of workers) killQuietly(pid);
    await server.stop('SIGKILL');
    dirs.add(server.dataDir);
  }
  for (const db of databases) await db.drop().catch(() => undefined);
  for (const dir of dirs) await removeDir(dir);
});

/**
 * Decisions one after another until `stop`, each to one of the living `targets` in turn; the
 * ids of the allows acknowledged.
 */
async function client(targets: RunningServer[], fx: AgentFixture, allowed: string[]): Promise<void> {
  const dispatcher = new Agent({ connections: 2 });
  try {
    for (let n = 0; !stop.now; n++) {
      const living = targets.filter((s) => s.proc.exitCode === null && s.proc.signalCode === null);
      const target = living[n % Math.max(1, living.length)];
      if (!target) break;
      try {
        const res = await request(`${target.url}/v1/actions/authorize`, {
          method: 'POST',
          dispatcher,
          headers: { ...bearer(fx.key), 'content-type': 'application/json', 'idempotency-key': randomUUID() },
          body: JSON.stringify(payment(1 + (allowed.length % 50))),
          headersTimeout: 20_000,
          bodyTimeout: 20_000,
        });
        const body = (await res.body.json()) as { id?: string; decision?: string };
        if (res.statusCode === 200 && body.decision === 'allow' && body.id) allowed.push(body.id);
      } catch (err) {
        // A request on the killed worker's connection: not acknowledged, so nothing is owed.
        if (!CONNECTION_ERRORS.has((err as { code?: string }).code ?? '')) throw err;
      }
    }
  } finally {
    await dispatcher.close();
  }
}

/** The pid in a lease holder's name (`host:pid:uuid`, server.ts). */
const pidOf = (lease: LedgerLease | undefined): number => Number(lease?.holder.split(':')[1] ?? NaN);

const ENV = {
  ...SERVER_ENV,
  SVC_GATE_RATE_PER_MINUTE: '1000000',
  SVC_LEDGER_INTEGRATE_EVERY_MS: String(EVERY_MS),
};
const RULES = [{ actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 }];

/**
 * After the load: the integrator catches up (nothing waits), the servers stop, and the store holds
 * every acknowledged allow's record exactly once at dense indices; `svc ledger verify` passes.
 */
async function checkLedger(
  t: ExecutionContext,
  store: Store,
  wid: string,
  allowed: string[],
  running: RunningServer[],
  storeArgs: string[],
): Promise<void> {
  const caughtUp = await poll(
    () => store.tables.ledgerWaiting.scan([wid], { limit: 1 }),
    (w) => w.length === 0,
    { timeoutMs: 20_000, everyMs: 100 },
  );
  t.deepEqual(caughtUp, [], 'the integrator caught up: nothing left waiting');
  for (const server of running) t.is(await server.stop(), 0);

  const entries = (await store.tables.ledger.scan([wid])).map((e) => ({
    key: e.key,
    record: JSON.parse(e.value.bytes) as { index: number; id: string; subject: string; kind: string },
  }));
  t.deepEqual(
    entries.map((e) => e.key[1]),
    entries.map((_, i) => i),
    'indices are dense',
  );
  t.true(
    entries.every((e) => e.record.index === e.key[1]),
    'each record holds its index',
  );
  t.is(new Set(entries.map((e) => e.record.id)).size, entries.length, 'no record integrated twice');
  const decided = new Map<string, number>();
  for (const { record } of entries)
    if (record.kind === 'action.allowed') decided.set(record.subject, (decided.get(record.subject) ?? 0) + 1);
  const missing = allowed.filter((id) => decided.get(id) !== 1);
  t.deepEqual(missing, [], 'every acknowledged allow has exactly one integrated record');
  t.is((await store.tables.ledgerHeads.get(wid))?.size, entries.length, 'the head counts every record');

  const verify = await svc(['ledger', 'verify', ...storeArgs, '--json'], { timeoutMs: 120_000 });
  t.is(verify.code, 0, verify.stdout + verify.stderr);
  t.like(JSON.parse(verify.stdout), { ok: true });
}

/** Waits until the lease has moved from `holder`, then until decisions go on; logs how long. */
async function leaseMoves(
  t: ExecutionContext,
  round: number,
  lease: () => Promise<LedgerLease | undefined>,
  holder: string,
  allowed: string[],
): Promise<void> {
  const killedAt = Date.now();
  const acknowledgedAtKill = allowed.length;
  // Another process takes the lease once it expires (2 s), without any restart of ours.
  const moved = await poll(lease, (l) => l !== undefined && l.holder !== holder, { timeoutMs: 20_000, everyMs: 50 });
  t.not(moved!.holder, holder, `round ${round}: the lease moved`);
  t.log(
    `round ${round}: the lease moved in ${Date.now() - killedAt} ms; ${allowed.length - acknowledgedAtKill} allows meanwhile`,
  );
  const after = allowed.length;
  const goingOn = await poll(
    () => allowed.length,
    (n) => n >= after + 10,
    { timeoutMs: 20_000, everyMs: 10 },
  );
  t.true(goingOn >= after + 10, `round ${round}: decisions go on`);
}

test.serial(
  'svc serve --workers 2, the integrator killed with SIGKILL under load: the lease moves, every acknowledged record is integrated once, indices dense, the ledger verifies',
  async (t) => {
    t.timeout(300_000);
    const first = await startServer({ env: ENV });
    servers.push(first);
    const fx = await createAgent(first, RULES, 'busy-bot');
    t.is(await first.stop(), 0);
    const server = await startServer({ args: ['--workers', '2'], env: ENV, dataDir: first.dataDir });
    servers.push(server);
    const url = await storeUrlFor(server.dataDir);
    const store = await openStore(server.dataDir, { url });
    stores.push(store);
    const lease = () => store.tables.ledgerLeases.get('integrator');

    const allowed: string[] = [];
    stop.now = false;
    const clients = [0, 1, 2].map(() => client([server], fx, allowed));
    const holders: string[] = [];
    for (let kill = 1; kill <= KILLS; kill++) {
      // The holder is a living worker of this server (a replacement takes a moment to start).
      const held = await poll(lease, (l) => l !== undefined && workersOf(server.proc.pid!).includes(pidOf(l)), {
        timeoutMs: 30_000,
        everyMs: 50,
      });
      t.true(workersOf(server.proc.pid!).includes(pidOf(held)), `round ${kill}: a worker holds the lease`);
      holders.push(held!.holder);
      const before = allowed.length;
      await poll(
        () => allowed.length,
        (n) => n >= before + 20,
        { timeoutMs: 20_000, everyMs: 10 },
      );
      killQuietly(pidOf(held));
      await leaseMoves(t, kill, lease, held!.holder, allowed);
    }
    stop.now = true;
    await Promise.all(clients);
    t.is(new Set(holders).size, KILLS, 'each round killed another holder');
    t.log(`${KILLS} integrators killed; ${allowed.length} allows acknowledged`);
    await checkLedger(
      t,
      store,
      fx.wid,
      allowed,
      [server],
      ['--data-dir', server.dataDir, ...(url ? ['--store', url] : [])],
    );
  },
);

test.serial(
  'two PostgreSQL instances, the integrator killed with SIGKILL under load: the lease moves to the other, every acknowledged record is integrated once, indices dense, the ledger verifies',
  async (t) => {
    t.timeout(300_000);
    const db = await freshDatabase();
    databases.push(db);
    const dataDir = await tempDir('svc-integrator-pg-');
    dirs.add(dataDir);
    const start = async () => {
      const s = await startServer({ dataDir, args: ['--store', db.url], env: ENV });
      servers.push(s);
      return s;
    };
    const instances = [await start()];
    const fx = await createAgent(instances[0]!, RULES, 'busy-bot');
    instances.push(await start());
    const store = await openStore(dataDir, { url: db.url });
    stores.push(store);
    const lease = () => store.tables.ledgerLeases.get('integrator');

    const allowed: string[] = [];
    stop.now = false;
    const clients = [0, 1, 2].map(() => client(instances, fx, allowed));
    for (let kill = 1; kill <= KILLS; kill++) {
      const held = await poll(
        lease,
        (l) => instances.some((s) => s.proc.pid === pidOf(l) && s.proc.exitCode === null),
        {
          timeoutMs: 30_000,
          everyMs: 50,
        },
      );
      const holder = instances.find((s) => s.proc.pid === pidOf(held));
      if (!holder) return t.fail(`round ${kill}: no running instance holds the lease`);
      const before = allowed.length;
      await poll(
        () => allowed.length,
        (n) => n >= before + 20,
        { timeoutMs: 20_000, everyMs: 10 },
      );
      await holder.stop('SIGKILL');
      instances.splice(instances.indexOf(holder), 1);
      await leaseMoves(t, kill, lease, held!.holder, allowed);
      // The killed instance comes back, as an orchestrator would restart it.
      instances.push(await start());
    }
    stop.now = true;
    await Promise.all(clients);
    t.log(`${KILLS} integrators killed; ${allowed.length} allows acknowledged`);
    await checkLedger(t, store, fx.wid, allowed, instances, ['--data-dir', dataDir, '--store', db.url]);
  },
);
