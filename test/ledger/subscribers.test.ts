import test from 'ava';
import { randomBytes } from 'node:crypto';
import { AppError } from '../../src/errors/app-error.js';
import { createLedger, type Ledger, type LedgerEvent } from '../../src/ledger/service.js';
import type { LedgerSubscriber } from '../../src/ledger/subscribers.js';
import { randomIds } from '../../src/lib/ids.js';
import { createSigningKeys } from '../../src/signing/service.js';
import { migrateStore, openStore, type Store } from '../../src/store/index.js';
import { removeDir, tempDir } from '../helpers/process.js';
import { fixedClock, withStore } from '../helpers/store.js';

/**
 * The ledger's subscribers (src/ledger/subscribers.ts), on a real LMDB file: called in the order
 * given, inside the write that appends each record, and what they write commits with the record
 * or not at all.
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
const newLedger = (): Ledger =>
  createLedger({
    store,
    clock,
    ids: randomIds,
    signingKeys: createSigningKeys({ store, masterKey: randomBytes(32), clock }),
    originHost: 'svc.test',
  });

const event = (workspaceId: string, kind = 'agent.created'): LedgerEvent => ({
  workspaceId,
  actor: 'operator:cli',
  kind,
  subject: 'agt_1',
  data: {},
});

/**
 * A subscriber that notes, in the store, each record it saw (by the count of waiting records its
 * workspace had then, its own included) and that count.
 */
const noting = (name: string, seen: string[]): LedgerSubscriber => ({
  async onRecordInWrite(record) {
    const waiting = await store.tables.ledgerWaiting.scan([record.workspaceId]);
    assertOwn(
      waiting.map((w) => w.key[3]),
      record.id,
    );
    seen.push(`${name}:${waiting.length - 1}`);
    await store.tables.meta.put(`test-subscriber/${name}/${record.id}`, waiting.length);
  },
});

/** The record is among the waiting ones its subscriber reads: written before it is called. */
function assertOwn(ids: unknown[], id: string): void {
  if (!ids.includes(id)) throw new Error(`record ${id} was not written before its subscriber ran`);
}

test('each record reaches every subscriber, in the order given, inside its write and after the head', async (t) => {
  const ledger = newLedger();
  const seen: string[] = [];
  ledger.subscribe([noting('first', seen), noting('second', seen)]);
  // Appends in one write are awaited one after the other (service.ts `record`).
  const records = await store.write(async () => [
    await ledger.record(event('ws_order')),
    await ledger.record(event('ws_order')),
  ]);
  t.deepEqual(seen, ['first:0', 'second:0', 'first:1', 'second:1']);
  for (const [i, record] of records.entries()) {
    // Each read the waiting records as of its record: written before the subscribers are called.
    t.is(await store.tables.meta.get(`test-subscriber/first/${record.id}`), i + 1);
    t.is(await store.tables.meta.get(`test-subscriber/second/${record.id}`), i + 1);
  }
});

test('what a subscriber writes commits with the record, or neither is stored', async (t) => {
  const ledger = newLedger();
  const seen: string[] = [];
  ledger.subscribe([noting('outbox', seen)]);
  let id = '';
  await t.throwsAsync(
    store.write(async () => {
      id = (await ledger.record(event('ws_rollback'))).id;
      throw new AppError('invalid_request', { message: 'the decision failed after its record' });
    }),
    { instanceOf: AppError, message: 'the decision failed after its record' },
  );
  t.deepEqual(seen, ['outbox:0'], 'the subscriber ran');
  t.is(await store.tables.meta.get(`test-subscriber/outbox/${id}`), undefined, 'its write was rolled back');
  t.is(await ledger.head('ws_rollback'), undefined, 'and so was the record');
});

test('a subscriber that throws aborts the write: the record is not stored', async (t) => {
  const ledger = newLedger();
  ledger.subscribe([
    {
      async onRecordInWrite() {
        throw new Error('a broken invariant');
      },
    },
  ]);
  // An unexpected error in a write aborts it and reaches the caller as thrown (the async store
  // wraps only its own faults in StoreError); an HTTP caller gets a 500.
  await t.throwsAsync(
    store.write(() => ledger.record(event('ws_throws'))),
    {
      instanceOf: Error,
      message: 'a broken invariant',
    },
  );
  t.is(await ledger.head('ws_throws'), undefined);
  t.deepEqual((await ledger.list('ws_throws', { limit: 10 })).data, []);
});

test('the subscribers are given once, before the first record', async (t) => {
  const given = newLedger();
  given.subscribe([]);
  t.throws(() => given.subscribe([]), { message: 'the ledger has its subscribers already' });

  const late = newLedger();
  await store.write(() => late.record(event('ws_late')));
  t.throws(() => late.subscribe([noting('late', [])]), {
    message: 'the ledger takes its subscribers before its first record',
  });
});

test('the composition root gives the ledger its subscribers', async (t) => {
  const appDir = await tempDir();
  try {
    await withStore(appDir, (app) => {
      t.throws(() => app.services.ledger.subscribe([]), { message: 'the ledger has its subscribers already' });
    });
  } finally {
    await removeDir(appDir);
  }
});
