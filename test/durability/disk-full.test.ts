import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { authorize, createAgent, payment } from '../helpers/gate.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { startServer, type RunningServer } from '../helpers/process.js';
import { fillDisk, mountSmallDisk, type SmallDisk } from '../helpers/small-disk.js';
import { withStore } from '../helpers/store.js';

/**
 * The data dir on a small file system that fills up (a tmpfs the test mounts): the store cannot
 * grow, and the server
 * - fails closed: authorize answers `503 store_unavailable` in the SPEC.md 7.1 shape with
 *   retry-after, never a 500, and nothing of the refused request is kept;
 * - keeps answering reads (an action, whoami), and readiness says `503 degraded`;
 * - takes writes again, and is ready again, once space returns (the filler file is deleted);
 * - leaves a store where every action has its ledger record and the ledger verifies.
 */

const SIZE = '8M';

const title = 'a full disk: authorize fails closed with 503, reads answer, writes resume when space returns';

let disk: SmallDisk | undefined;
let server: RunningServer | undefined;

test.after.always(async () => {
  if (server && server.proc.exitCode === null) await server.stop();
  disk?.remove();
});

test(title, async (t) => {
  t.timeout(180_000);
  disk = mountSmallDisk(SIZE);
  const mountDir = disk.dir;
  server = await startServer({
    dataDir: join(mountDir, 'data'),
    env: { SVC_GATE_RATE_PER_MINUTE: '100000000' },
  });
  const agent = await createAgent(server, [
    { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 },
  ]);
  const before = await authorize(server, agent.key, payment(100));
  t.is(before.body.decision, 'allow');

  // Fill the file system, then ask until the store cannot find a page to reuse.
  const filler = join(mountDir, 'filler');
  t.true((await fillDisk(filler)) > 0);
  const allowed: string[] = [before.body.id];
  let refused: Awaited<ReturnType<typeof authorize>> | undefined;
  for (let i = 0; i < 5_000 && !refused; i++) {
    const res = await authorize(server, agent.key, payment(100, { idempotencyKey: `fill-${i}` }));
    if (res.status === 200) allowed.push(res.body.id);
    else refused = res;
  }
  t.truthy(refused, 'the store filled up');
  t.log(`${allowed.length - 1} allows after the disk filled, before the first refusal`);
  assertError(t, refused!, 503, 'store_unavailable');
  t.is(refused!.headers['retry-after'], '5');
  t.is(refused!.body.error.docs, `${server.url}/docs/errors#store_unavailable`);
  t.false(refused!.text.includes('No space left'), 'the cause stays in the logs');
  // Readiness says degraded. Asked at once: readiness follows the last write, and a later one may
  // find a page LMDB freed (the loop below accepts that) and make the store ready again.
  const degraded = await call(server.url, 'GET', '/readyz');
  t.is(degraded.status, 503, degraded.text);
  t.like(degraded.body, { status: 'degraded', reason: 'store_unavailable' });
  // It keeps failing closed, never a 500, while the disk is full.
  for (let i = 0; i < 5; i++) {
    const again = await authorize(server, agent.key, payment(100, { idempotencyKey: `full-${i}` }));
    t.true(again.status === 503 || again.status === 200, `${again.status} ${again.text}`);
    if (again.status === 200) allowed.push(again.body.id);
    else t.is(again.body.error.type, 'store_unavailable');
  }

  // Reads still answer; the process is alive.
  const read = await call(server.url, 'GET', `/v1/actions/${before.body.id}`, { headers: bearer(agent.key) });
  t.is(read.status, 200, read.text);
  t.is(read.body.decision, 'allow');
  const whoami = await call(server.url, 'GET', '/v1/whoami', { headers: bearer(agent.key) });
  t.is(whoami.status, 200, whoami.text);
  t.is((await call(server.url, 'GET', '/healthz')).status, 200);
  t.regex(server.stderr(), /"msg":"request failed"/, 'the operator sees the failure in the log');
  t.regex(server.stderr(), /No space left on device/);

  // Space returns: writes resume, and readiness comes back.
  await rm(filler);
  const after = await authorize(server, agent.key, payment(100, { idempotencyKey: 'after-space' }));
  t.is(after.status, 200, after.text);
  t.is(after.body.decision, 'allow');
  allowed.push(after.body.id);
  let ready = await call(server.url, 'GET', '/readyz');
  for (let i = 0; i < 50 && ready.status !== 200; i++) ready = await call(server.url, 'GET', '/readyz');
  t.is(ready.status, 200, ready.text);
  t.is(ready.body.status, 'ready');

  t.is(await server.stop(), 0, server.stderr());
  // Nothing half-written: exactly the allows the client received, each with its ledger record;
  // the ledger verifies.
  const stored = await withStore(server.dataDir, async (app) => {
    const actions = (await app.store.tables.actions.scan([agent.wid])).map((e) => e.value);
    const subjects = new Set(
      (await app.store.tables.ledger.scan([agent.wid])).map(
        (e) => (JSON.parse(e.value.bytes) as { subject?: string }).subject,
      ),
    );
    return {
      actions: actions.map((a) => a.id).sort(),
      unrecorded: actions.filter((a) => !subjects.has(a.id)).map((a) => a.id),
      verify: await app.services.ledger.verify(agent.wid),
    };
  });
  t.deepEqual(stored.actions, [...allowed].sort(), 'the store holds exactly the allows that were answered');
  t.deepEqual(stored.unrecorded, [], 'no action without its ledger record');
  t.true(stored.verify.ok, stored.verify.problem ?? '');
});
