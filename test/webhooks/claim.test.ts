import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { createLedger } from '../../src/ledger/service.js';
import { randomIds } from '../../src/lib/ids.js';
import { createLogger } from '../../src/lib/log.js';
import { createSigningKeys } from '../../src/signing/service.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/index.js';
import { createWebhooks } from '../../src/webhooks/service.js';
import { manualClock } from '../helpers/clock.js';
import { startReceiver } from '../helpers/receiver.js';

/**
 * Several server instances share one store, and each runs the outbox dispatcher: a delivery due
 * is claimed in one write (read, check, lease), so exactly one instance sends it, however their
 * passes interleave. A claim that lapses (its instance died mid-try) is sent again.
 */
const SECRET = 'whs_claim_test_secret_value_0123456789';
const WID = 'ws_0123456789abcdefghijkl';
const settings = {
  allowPrivateTargets: true,
  timeoutMs: 2_000,
  backoffBaseMs: 1_000,
  backoffMaxMs: 60_000,
  giveUpAfterMs: 86_400_000,
  dispatchIntervalMs: 60_000,
};

async function setup() {
  const dir = await mkdtemp(join(tmpdir(), 'svc-claim-'));
  const store: Store = await openStore(dir);
  const clock = manualClock();
  const receiver = await startReceiver(() => SECRET);
  const masterKey = Buffer.alloc(32, 7);
  const log = createLogger('silent');
  // Two instances: each its own services over the one store, as two processes would have.
  const instance = () => {
    const signingKeys = createSigningKeys({ store, masterKey, clock });
    const ledger = createLedger({ store, clock, ids: randomIds, signingKeys, originHost: 'svc.test' });
    const webhooks = createWebhooks({ store, clock, ids: randomIds, masterKey, ledger, log, settings });
    webhooks.registerTarget('relay', { resolve: () => Promise.resolve({ url: receiver.url, secret: SECRET }) });
    return webhooks;
  };
  const [a, b] = [instance(), instance()];
  return {
    store,
    clock,
    receiver,
    a,
    b,
    close: async () => {
      await receiver.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

test('two instances dispatching at once send a due delivery exactly once', async (t) => {
  const { store, clock, receiver, a, b, close } = await setup();
  t.teardown(close);
  const queued = await store.write(() =>
    a.enqueueInWrite(WID, 'relay', {
      eventId: 'evt_claim_1',
      eventType: 'test.event',
      body: JSON.stringify({ hello: 'world' }),
      createdAt: new Date(clock.now()).toISOString(),
    }),
  );

  await Promise.all([a.dispatch(), b.dispatch(), a.dispatch(), b.dispatch()]);

  t.is(receiver.state.received.length, 1, 'sent once');
  t.like(receiver.state.received[0], { id: 'evt_claim_1', verified: true });
  const stored = await store.tables.deliveries.get([WID, 'relay', queued.id]);
  t.like(stored, { status: 'delivered', nextAttemptAt: null });
  t.is(stored?.attempts.length, 1, 'one try recorded');
  t.deepEqual(await store.tables.outbox.scan([]), [], 'nothing left in the outbox');

  // Later passes of either instance send nothing more.
  clock.advance(3_600_000);
  await Promise.all([a.dispatch(), b.dispatch()]);
  t.is(receiver.state.received.length, 1);
});

test('a claim whose instance died before sending is sent again once it lapses, by another instance', async (t) => {
  const { store, clock, receiver, b, close } = await setup();
  t.teardown(close);
  const queued = await store.write(() =>
    b.enqueueInWrite(WID, 'relay', {
      eventId: 'evt_claim_2',
      eventType: 'test.event',
      body: '{}',
      createdAt: new Date(clock.now()).toISOString(),
    }),
  );
  // An instance claimed it (its outbox entry moved ahead, as a claim does) and died before sending.
  const [entry] = await store.tables.outbox.scan([]);
  const leased = [clock.now() + 2 * settings.timeoutMs + 60_000, WID, 'relay', queued.id];
  await store.write(async (tx) => {
    await tx.outbox.remove(entry!.key);
    await tx.outbox.put(leased, 1);
  });

  await b.dispatch();
  t.is(receiver.state.received.length, 0, 'not sent while the claim holds');

  clock.advance(2 * settings.timeoutMs + 60_000);
  await b.dispatch();
  t.is(receiver.state.received.length, 1, 'sent once the claim lapsed');
  t.like(await store.tables.deliveries.get([WID, 'relay', queued.id]), { status: 'delivered' });
});
