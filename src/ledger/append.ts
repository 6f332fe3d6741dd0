import { canonicalJson } from '../lib/canonical-json.js';
import { isoAt } from '../lib/clock.js';
import { CHECKPOINT_EVERY_RECORDS, checkpointInWrite } from './checkpoint.js';
import { emptyHead, type LedgerParts } from './context.js';
import { leafHash } from './merkle.js';
import type { LedgerEvent, LedgerRecord } from './records.js';
import type { LedgerSubscriber } from './subscribers.js';

/**
 * Appending to a workspace's ledger, and the subscribers called with each record.
 * Rules:
 * - An append runs inside the caller's store.write(): it reads the head and writes the next entry
 *   and the head in the caller's transaction, so a decision and its record commit together or not
 *   at all, and a concurrent append to the same ledger (another write, another process) conflicts
 *   and runs again: appends are serialized by the store, and no head is kept in memory.
 * - Within ONE write, appends are queued one after another (store.currentWrite() names the
 *   write), so even a `Promise.all` over `record` gives consecutive indexes.
 * - The stored value is the exact RFC 8785 bytes that were hashed, with the RFC 9162 leaf hash.
 * - The subscribers (subscribers.ts) are given once, in order, before the first record; each is
 *   called with each record in its write, after the record and the head are written.
 */

/** The appends under way in each write (record: one at a time per write). */
const appending = new WeakMap<object, Promise<unknown>>();
const NOT_IN_WRITE = {};

/** The append of one ledger and its subscribers: `subscribe` once, then `record` in writes. */
export function createAppend(parts: LedgerParts): {
  subscribe(ordered: readonly LedgerSubscriber[]): void;
  record(event: LedgerEvent, options?: { id?: string }): Promise<LedgerRecord>;
} {
  const { store, clock, ids, repo } = parts;
  let subscribers: readonly LedgerSubscriber[] | null = null;
  // Subscribers given after a record was appended would have missed it: refused.
  let appended = false;

  const append = async (event: LedgerEvent, options: { id?: string }): Promise<LedgerRecord> => {
    const wid = event.workspaceId;
    const head = { ...((await repo.head(wid)) ?? emptyHead()) };
    const record: LedgerRecord = {
      index: head.size,
      id: options.id ?? ids.id('evr'),
      at: isoAt(clock.now()),
      ...event,
    };
    const bytes = canonicalJson(record);
    const leaf = leafHash(bytes);
    await repo.putEntry(wid, head.size, { bytes, leaf: leaf.toString('base64url') });
    head.size += 1;
    if (head.size - head.checkpointSize >= CHECKPOINT_EVERY_RECORDS) await checkpointInWrite(parts, wid, head);
    await repo.putHead(wid, head);
    appended = true;
    for (const subscriber of subscribers ?? []) await subscriber.onRecordInWrite(record);
    return record;
  };

  return {
    subscribe(ordered) {
      if (subscribers) throw new Error('the ledger has its subscribers already');
      if (appended) throw new Error('the ledger takes its subscribers before its first record');
      subscribers = Object.freeze([...ordered]);
    },

    async record(event, options = {}) {
      // Appends within one write run one after another, whatever the caller awaits: each reads
      // the head the previous one wrote (two at once would both take the same index).
      const write = store.currentWrite() ?? NOT_IN_WRITE;
      const mine = (appending.get(write) ?? Promise.resolve()).then(() => append(event, options));
      appending.set(
        write,
        mine.catch(() => undefined),
      );
      return mine;
    },
  };
}
