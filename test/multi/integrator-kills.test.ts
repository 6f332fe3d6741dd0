import test from 'ava';
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'undici';
import type { LedgerLease } from '../../src/ledger/records.js';
import { openStore, type Store } from '../../src/store/index.js';
import { createAgent, payment, type AgentFixture } from '../helpers/gate.js';
import { bearer } from '../helpers/http.js';
import { storeUrlFor } from '../helpers/postgres.js';
import { killQuietly, removeDir, startServer, svc, workersOf, type RunningServer } from '../helpers/process.js';
import { poll } from '../helpers/wait.js';
import { SERVER_ENV } from './suite.js';

/**
 * The ledger's integrator (src/ledger/integrate.ts, lease.ts) killed with SIGKILL under a decision
 * load: `svc serve --workers 2` on one store, clients deciding all along; the worker that holds
 * the integrator lease is killed again and again. The lease moves to a living worker, decisions
 * go on (an append never waits on the integrator), and in the end every acknowledged
 * allow's record is integrated exactly once, the indices are dense, nothing is left waiting, and
 * `svc ledger verify` passes.
 */

const KILLS = Number(process.env.SVC_TEST_INTEGRATOR_KILLS ?? 4);
const EVERY_MS = 200;
const CONNECTION_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

let server: RunningServer | undefined;
let store: Store | undefined;
const stop = { now: false };
test.after.always(async () => {
  stop.now = true;
  await store?.close();
  if (!server) return;
  const workers = server.proc.exitCode === null ? workersOf(server.proc.pid!) : [];
  server.proc.kill('SIGKILL');
  for (const pid of workers) killQuietly(pid);
  await server.stop('SIGKILL');
  await removeDir(server.dataDir);
});

/** Decisions one after another until `stop`; the ids of the allows acknowledged. */
async function client(target: RunningServer, fx: AgentFixture, allowed: string[]): Promise<void> {
  const dispatcher = new Agent({ connections: 1 });
  try {
    while (!stop.now) {
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

test('the integrator killed with SIGKILL under load: the lease moves, every acknowledged record is integrated once, indices dense, the ledger verifies', async (t) => {
  t.timeout(300_000);
  const env = {
    ...SERVER_ENV,
    SVC_GATE_RATE_PER_MINUTE: '1000000',
    SVC_LEDGER_INTEGRATE_EVERY_MS: String(EVERY_MS),
  };
  const first = await startServer({ env });
  server = first;
  const rules = [{ actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 }];
  const fx = await createAgent(first, rules, 'busy-bot');
  t.is(await first.stop(), 0);
  server = await startServer({ args: ['--workers', '2'], env, dataDir: first.dataDir });
  store = await openStore(server.dataDir, { url: await storeUrlFor(server.dataDir) });
  const lease = () => store!.tables.ledgerLeases.get('integrator');

  const allowed: string[] = [];
  const clients = [0, 1, 2].map(() => client(server!, fx, allowed));
  const holders: string[] = [];
  for (let kill = 1; kill <= KILLS; kill++) {
    // The holder is a living worker of this server (a replacement takes a moment to start).
    const held = await poll(lease, (l) => l !== undefined && workersOf(server!.proc.pid!).includes(pidOf(l)), {
      timeoutMs: 30_000,
      everyMs: 50,
    });
    const holder = held!.holder;
    t.true(workersOf(server.proc.pid!).includes(pidOf(held)), `round ${kill}: a worker holds the lease`);
    holders.push(holder);
    const before = allowed.length;
    await poll(
      () => allowed.length,
      (n) => n >= before + 20,
      { timeoutMs: 20_000, everyMs: 10 },
    );
    killQuietly(pidOf(held));
    const killedAt = Date.now();
    const acknowledgedAtKill = allowed.length;
    // The lease moves: another process takes it once it expires (2 s), without any restart of ours.
    const moved = await poll(lease, (l) => l !== undefined && l.holder !== holder, { timeoutMs: 20_000, everyMs: 50 });
    t.not(moved!.holder, holder, `round ${kill}: the lease moved`);
    t.log(
      `round ${kill}: the lease moved in ${Date.now() - killedAt} ms; ${allowed.length - acknowledgedAtKill} allows meanwhile`,
    );
    const after = allowed.length;
    const goingOn = await poll(
      () => allowed.length,
      (n) => n >= after + 10,
      { timeoutMs: 20_000, everyMs: 10 },
    );
    t.true(goingOn >= after + 10, `round ${kill}: decisions go on`);
  }
  stop.now = true;
  await Promise.all(clients);
  t.is(new Set(holders).size, KILLS, 'each round killed another holder');
  t.log(`${KILLS} integrators killed; ${allowed.length} allows acknowledged`);

  // While the server still runs, its integrator catches up: nothing waits, and the head counts all.
  const caughtUp = await poll(
    () => store!.tables.ledgerWaiting.scan([fx.wid], { limit: 1 }),
    (w) => w.length === 0,
    { timeoutMs: 20_000, everyMs: 100 },
  );
  t.deepEqual(caughtUp, [], 'the integrator caught up: nothing left waiting');
  t.is(await server.stop(), 0);

  const entries = (await store.tables.ledger.scan([fx.wid])).map((e) => ({
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
  t.is((await store.tables.ledgerHeads.get(fx.wid))?.size, entries.length, 'the head counts every record');
  await store.close();
  store = undefined;

  const url = await storeUrlFor(server.dataDir);
  const verify = await svc(
    ['ledger', 'verify', '--data-dir', server.dataDir, ...(url ? ['--store', url] : []), '--json'],
    {
      timeoutMs: 120_000,
    },
  );
  t.is(verify.code, 0, verify.stdout + verify.stderr);
  t.like(JSON.parse(verify.stdout), { ok: true });
});
