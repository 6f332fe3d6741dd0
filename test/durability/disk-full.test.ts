import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { authorize, createAgent, payment, type AgentFixture } from '../helpers/gate.js';
import { assertError, bearer, call, type Reply } from '../helpers/http.js';
import { startServer, svc, type RunningServer } from '../helpers/process.js';
import { fillDisk, mountSmallDisk, type SmallDisk } from '../helpers/small-disk.js';
import { openStore } from '../../src/store/open.js';
import { withStore } from '../helpers/store.js';
import { poll, within } from '../helpers/wait.js';

/**
 * The data dir on a small file system that fills up (a tmpfs the test mounts) while agents keep
 * authorizing (8 loops) and reading (2 loops): the store cannot grow, and the server
 * - fails closed: authorize answers `503 store_unavailable` in the documented error shape with
 *   retry-after, never a 500, and nothing of the refused request is kept;
 * - stays up: it never crashes or hangs; /healthz and reads keep answering, and readiness says
 *   `503 degraded`;
 * - takes writes again, and is ready again, once space returns (the filler file is deleted),
 *   without a restart; the disk fills and empties several times, since what broke was racy;
 * - loses nothing it acknowledged, stops cleanly, and its ledger verifies (`svc ledger verify`).
 */

const SIZE = '16M';
const ROUNDS = 3;
const AUTHORIZERS = 8;
const READERS = 2;
/** Any one answer slower than this is a hung server, not a slow one. */
const ANSWER_BOUND_MS = 20_000;

const title =
  'a full disk under load: authorize fails closed with 503, health and reads answer, writes resume when space returns';

let disk: SmallDisk | undefined;
let storeDisk: SmallDisk | undefined;
let server: RunningServer | undefined;
let load: Load | undefined;

test.after.always(async () => {
  if (server && server.proc.exitCode === null) await server.stop('SIGKILL');
  await load?.stop();
  disk?.remove();
  storeDisk?.remove();
});

/** What the loops saw: the allows the server acknowledged, the refusals, and anything else. */
interface Load {
  allowed: string[];
  refused: number;
  reads: number;
  /** Answers that should never be: a 500, a reset connection, a hung request, a read refused. */
  wrong: string[];
  stop(): Promise<void>;
}

function startLoad(running: RunningServer, agent: AgentFixture, known: string): Load {
  const seen: Load = { allowed: [], refused: 0, reads: 0, wrong: [], stop: async () => {} };
  let stopped = false;
  // The loops end when told, or when the server is gone (the test then fails on that).
  const going = () => !stopped && running.proc.exitCode === null;
  let n = 0;
  const answer = async (what: string, request: () => Promise<Reply>): Promise<Reply | undefined> => {
    try {
      return await within(request(), `answer to ${what}`, ANSWER_BOUND_MS);
    } catch (err) {
      seen.wrong.push(`${what}: ${(err as Error).message}`);
      return undefined;
    }
  };
  const authorizer = async () => {
    while (going()) {
      const key = `load-${n++}`;
      const res = await answer(`authorize ${key}`, () =>
        authorize(running, agent.key, payment(100, { idempotencyKey: key })),
      );
      if (res === undefined) continue;
      if (res.status === 200 && res.body.decision === 'allow') seen.allowed.push(res.body.id as string);
      else if (res.status === 503 && res.body?.error?.type === 'store_unavailable') seen.refused++;
      else seen.wrong.push(`authorize ${key}: ${res.status} ${res.text}`);
    }
  };
  const reader = async () => {
    while (going()) {
      const id = seen.allowed[Math.floor(Math.random() * seen.allowed.length)] ?? known;
      const action = await answer(`GET action ${id}`, () =>
        call(running.url, 'GET', `/v1/actions/${id}`, { headers: bearer(agent.key) }),
      );
      const health = await answer('GET /healthz', () => call(running.url, 'GET', '/healthz'));
      if (action && action.status !== 200) seen.wrong.push(`GET action ${id}: ${action.status} ${action.text}`);
      if (health && health.status !== 200) seen.wrong.push(`GET /healthz: ${health.status} ${health.text}`);
      seen.reads++;
    }
  };
  const loops = [...Array.from({ length: AUTHORIZERS }, authorizer), ...Array.from({ length: READERS }, reader)];
  seen.stop = async () => {
    stopped = true;
    await Promise.all(loops);
  };
  return seen;
}

test(title, async (t) => {
  t.timeout(300_000);
  disk = mountSmallDisk(SIZE);
  const mountDir = disk.dir;
  server = await startServer({
    dataDir: join(mountDir, 'data'),
    env: { SVC_GATE_RATE_PER_MINUTE: '100000000' },
  });
  const running = server;
  const agent = await createAgent(running, [
    { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 },
  ]);
  const before = await authorize(running, agent.key, payment(100));
  t.is(before.body.decision, 'allow');
  const traffic = startLoad(running, agent, before.body.id as string);
  load = traffic;

  for (let round = 1; round <= ROUNDS; round++) {
    // Fill the file system under the load, until the store cannot find a page to reuse.
    const filler = join(mountDir, `filler-${round}`);
    t.true((await fillDisk(filler)) > 0);
    const refusedBefore = traffic.refused;
    const full = await poll(
      () => traffic.refused,
      (refused) => refused >= refusedBefore + 20 || running.proc.exitCode !== null,
      { timeoutMs: 60_000 },
    );
    t.is(running.proc.exitCode, null, `round ${round}: the server is still running\n${running.stderr().slice(-3000)}`);
    t.true(full >= refusedBefore + 20, `round ${round}: writes are refused while the disk is full`);

    // Refused in the documented shape, the cause kept for the logs.
    const refused = await authorize(running, agent.key, payment(100, { idempotencyKey: `full-${round}` }));
    if (refused.status === 200) traffic.allowed.push(refused.body.id as string);
    else {
      assertError(t, refused, 503, 'store_unavailable');
      t.is(refused.headers['retry-after'], '5');
      t.is(refused.body.error.docs, `${running.url}/docs/errors#store_unavailable`);
      t.false(refused.text.includes('No space left'), 'the cause stays in the logs');
    }
    // Readiness says degraded (readiness follows the last write: one that finds a page LMDB freed
    // makes it ready again, so it is asked until the refusals show), and health stays 200.
    const degraded = await poll(
      () => call(running.url, 'GET', '/readyz'),
      (res) => res.status === 503,
    );
    t.is(degraded.status, 503, degraded.text);
    t.like(degraded.body, { status: 'degraded', reason: 'store_unavailable' });
    t.is((await call(running.url, 'GET', '/healthz')).status, 200);
    const whoami = await call(running.url, 'GET', '/v1/whoami', { headers: bearer(agent.key) });
    t.is(whoami.status, 200, whoami.text);

    // Space returns: writes resume by themselves, and readiness comes back.
    await rm(filler);
    const allowedBefore = traffic.allowed.length;
    const resumed = await poll(
      () => traffic.allowed.length,
      (allowed) => allowed >= allowedBefore + 20 || running.proc.exitCode !== null,
      { timeoutMs: 60_000 },
    );
    t.true(resumed >= allowedBefore + 20, `round ${round}: writes resume once space returns`);
    const ready = await poll(
      () => call(running.url, 'GET', '/readyz'),
      (res) => res.status === 200,
    );
    t.is(ready.status, 200, ready.text);
    t.is(ready.body.status, 'ready');
  }
  await traffic.stop();
  const pageWrites = running.stderr().match(/Write error/g)?.length ?? 0;
  t.log(`${traffic.allowed.length} allows, ${traffic.refused} refusals, ${traffic.reads} reads`);
  t.log(`${pageWrites} page writes the full disk refused to LMDB (writes in flight as it filled)`);
  t.deepEqual(traffic.wrong, [], 'every answer was an allow, a 503 store_unavailable or a read');
  t.regex(running.stderr(), /"msg":"request failed"/, 'the operator sees the failure in the log');
  t.regex(running.stderr(), /"code":"no_space"/);

  // Everything acknowledged is there, read over HTTP.
  const allowed = [before.body.id as string, ...traffic.allowed];
  for (const id of allowed) {
    const read = await call(running.url, 'GET', `/v1/actions/${id}`, { headers: bearer(agent.key) });
    t.is(read.status, 200, `${id}: ${read.text}`);
  }

  t.is(await within(running.stop(), 'exit after SIGTERM', 30_000), 0, running.stderr());
  const verified = await svc(['ledger', 'verify', '--data-dir', running.dataDir, '--json']);
  t.is(verified.code, 0, verified.stdout + verified.stderr);
  // Nothing half-written: exactly the allows the clients received, each with its ledger record.
  const stored = await withStore(running.dataDir, async (app) => {
    const actions = (await app.store.tables.actions.scan([agent.wid])).map((e) => e.value);
    const subjects = new Set(
      (await app.store.tables.ledger.scan([agent.wid])).map(
        (e) => (JSON.parse(e.value.bytes) as { subject?: string }).subject,
      ),
    );
    return {
      actions: actions.map((a) => a.id).sort(),
      unrecorded: actions.filter((a) => !subjects.has(a.id)).map((a) => a.id),
    };
  });
  t.deepEqual(stored.actions, [...allowed].sort(), 'the store holds exactly the allows that were answered');
  t.deepEqual(stored.unrecorded, [], 'no action without its ledger record');
});

test('commits LMDB itself cannot write: each write fails as no_space, nothing of them is kept, and the store takes writes again and closes', async (t) => {
  t.timeout(60_000);
  storeDisk = mountSmallDisk('4M');
  const store = await openStore(join(storeDisk.dir, 'data'));
  await store.write(async (tx) => tx.meta.put('before', 1));
  const filler = join(storeDisk.dir, 'filler');
  // Concurrent writes, each large enough to need new pages; the store finds room for all of them,
  // then the first fills the disk as it runs: their commits are LMDB's to refuse. Only a few: each
  // page write the disk refuses is a small chance of lmdb-js overrunning its message buffer (see
  // roomToWrite in kv-lmdb.ts).
  const writes = Array.from({ length: 8 }, (_, i) =>
    store.write(async (tx) => {
      if (i === 0) await fillDisk(filler);
      // Each commit in an event turn of its own, so the failures span many of lmdb-js's batches.
      await new Promise((resolve) => setImmediate(resolve));
      await tx.meta.put(`big-${i}`, 'x'.repeat(64 * 1024));
    }),
  );
  const outcomes = await Promise.allSettled(writes);
  const codes = outcomes.map((o) => (o.status === 'rejected' ? (o.reason as { code?: string }).code : 'ok'));
  t.true(codes.includes('no_space'), codes.join(' '));
  t.deepEqual(
    codes.filter((c) => c !== 'ok' && c !== 'no_space' && c !== 'disk_error'),
    [],
    'every failure is the store being unavailable',
  );
  t.false(store.writable(), 'readiness says degraded');
  for (const [i, code] of codes.entries()) {
    const kept = (await store.tables.meta.get(`big-${i}`)) !== undefined;
    t.is(kept, code === 'ok', `write ${i} (${code}) is kept exactly when it was acknowledged`);
  }
  // Refused at once while the disk is full, before LMDB is asked.
  const again = await t.throwsAsync(store.write(async (tx) => tx.meta.put('again', 1)));
  t.is((again as { code?: string }).code, 'no_space');

  // It closes while the disk is still full (a stop then), and takes writes once space returns.
  await within(store.close(), 'close after failed commits');
  await rm(filler);
  const reopened = await openStore(join(storeDisk.dir, 'data'));
  await reopened.write(async (tx) => tx.meta.put('after', 1));
  t.true(reopened.writable());
  t.is(await reopened.tables.meta.get('after'), 1);
  t.is(await reopened.tables.meta.get('before'), 1);
  await reopened.close();
});
