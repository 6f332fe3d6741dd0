import test from 'ava';
import { randomBytes } from 'node:crypto';
import { createLedger, CHECKPOINT_EVERY_RECORDS, type LedgerEvent } from '../../src/ledger/service.js';
import { randomIds } from '../../src/lib/ids.js';
import { createSigningKeys } from '../../src/signing/service.js';
import { migrateStore, openStore, type Store } from '../../src/store/index.js';
import { verifyLedger } from '../../src/ledger/verify.js';
import { removeDir, tempDir } from '../helpers/process.js';
import { fixedClock } from '../helpers/store.js';

/**
 * Appends on the async store (src/ledger/service.ts): each writes a waiting entry under its own key
 * in its caller's write, so writes appending to one ledger at once never meet; integration
 * (integrate.ts) then gives them dense indexes, never two records at one index; the ledger then
 * verifies, and a checkpoint covers all of it.
 */
let dir: string;
let store: Store;

test.before(async () => {
  dir = await tempDir();
  store = await openStore(dir);
  await migrateStore(store);
});

test.after.always(async () => {
  await store?.close();
  await removeDir(dir);
});

const clock = fixedClock(Date.UTC(2026, 0, 1));
// One master key for the file: the ledger key the first integration makes is the one every later test uses.
const masterKey = randomBytes(32);
const newLedger = () => {
  const signingKeys = createSigningKeys({ store, masterKey, clock });
  return createLedger({ store, clock, ids: randomIds, signingKeys, originHost: 'svc.test' });
};
const event = (workspaceId: string, i: number): LedgerEvent => ({
  workspaceId,
  actor: 'operator:cli',
  kind: 'agent.created',
  subject: `agt_${i}`,
  data: { i },
});

test.serial('appends from concurrent writes get consecutive indexes, each once, and the ledger verifies', async (t) => {
  const ledger = newLedger();
  const n = 40;
  const records = await Promise.all(
    Array.from({ length: n }, (_, i) => store.write(() => ledger.record(event('ws_race', i)))),
  );
  t.false(
    records.some((r) => 'index' in r),
    'an appended record has no index before it is integrated',
  );
  t.like(await ledger.verify('ws_race'), { ok: true, size: 0, waiting: n });
  t.like(await ledger.bundle('ws_race'), { records: [] });
  t.is((await ledger.bundle('ws_race')).waiting.length, n);
  t.is(await ledger.integrateNow('ws_race'), n);
  const integrated = (await ledger.list('ws_race', { limit: 100 })).data;
  t.deepEqual(
    integrated.map((r) => r.index),
    Array.from({ length: n }, (_, i) => i),
  );
  t.deepEqual(new Set(integrated.map((r) => r.id)), new Set(records.map((r) => r.id)));
  const stored = (await ledger.list('ws_race', { limit: 100 })).data;
  t.is(stored.length, n);
  t.is(new Set(stored.map((r) => r.data.i)).size, n, 'every append is stored once');
  t.is((await ledger.head('ws_race'))?.size, n);
  t.like(await ledger.verify('ws_race'), { ok: true, size: n, problem: null });
});

test.serial('appends started at once inside ONE write still take consecutive indexes', async (t) => {
  const ledger = newLedger();
  const records = await store.write(() =>
    Promise.all(Array.from({ length: 5 }, (_, i) => ledger.record(event('ws_one_write', i)))),
  );
  const integrated = (await ledger.list('ws_one_write', { limit: 10 })).data;
  t.deepEqual(
    integrated.map((r) => [r.index, r.id]),
    records.map((r, i) => [i, r.id]),
  );
  t.like(await ledger.verify('ws_one_write'), { ok: true, size: 5, problem: null });
});

test.serial('integration signs a checkpoint per full batch in its write; checkpointAll covers the rest', async (t) => {
  const ledger = newLedger();
  const wid = 'ws_checkpoint';
  await store.write(async () => {
    for (let i = 0; i < CHECKPOINT_EVERY_RECORDS + 5; i += 1) await ledger.record(event(wid, i));
  });
  const first = await ledger.latestCheckpoint(wid);
  t.is(first.size, 0, 'nothing is integrated before the integrator runs');
  t.is(first.waiting, CHECKPOINT_EVERY_RECORDS + 5);
  t.is(first.checkpoint, null);
  // This ledger's, and any other ledger in the store with records waiting.
  t.true((await ledger.checkpointAll()) >= 1);
  t.is(await ledger.checkpointAll(), 0, 'nothing left to sign');
  t.is((await ledger.latestCheckpoint(wid)).checkpoint?.size, CHECKPOINT_EVERY_RECORDS + 5);
  t.like(await ledger.verify(wid), { ok: true, checkpoints: 2, uncheckpointed: 0 });
  const bundle = await ledger.bundle(wid);
  t.is(bundle.records.length, CHECKPOINT_EVERY_RECORDS + 5);
  t.deepEqual(
    bundle.consistency.map((c) => [c.from, c.to]),
    [[CHECKPOINT_EVERY_RECORDS, CHECKPOINT_EVERY_RECORDS + 5]],
  );
  t.true(bundle.jwks.keys.some((k) => (k as { use?: string }).use === 'ledger'));
});

test.serial(
  'waiting records are listed apart and checked against their hashes, in the store and in the bundle',
  async (t) => {
    const ledger = newLedger();
    const wid = 'ws_waiting';
    await store.write(async () => {
      for (let i = 0; i < 3; i += 1) await ledger.record(event(wid, i));
    });
    t.like(await ledger.verify(wid), { ok: true, size: 0, waiting: 3, problem: null });
    const bundle = await ledger.bundle(wid);
    t.deepEqual(
      bundle.waiting.map((w) => [w.integrated, 'index' in w.record, w.record.data.i]),
      [
        [false, false, 0],
        [false, false, 1],
        [false, false, 2],
      ],
    );
    t.true(verifyLedger({ ...bundle, waiting: bundle.waiting }).ok);
    // A decoded copy in the bundle that says something else than the hashed bytes is refused.
    const forged = bundle.waiting.map((w, i) =>
      i === 1 ? { ...w, record: { ...w.record, subject: 'agt_other' } } : w,
    );
    t.regex(
      String(verifyLedger({ ...bundle, waiting: forged }).problem),
      /waiting record evr_\w+: its decoded "record"/,
    );
    // A waiting record edited in the store no longer matches its leaf hash.
    const [first] = await store.tables.ledgerWaiting.scan([wid], { limit: 1 });
    await store.write(() =>
      store.tables.ledgerWaiting.put(first!.key, {
        ...first!.value,
        bytes: first!.value.bytes.replace('"i":0', '"i":7'),
      }),
    );
    t.like(await ledger.verify(wid), { ok: false, waiting: 3 });
    t.regex(String((await ledger.verify(wid)).problem), /waiting record evr_\w+ does not match its stored leaf hash/);
  },
);
