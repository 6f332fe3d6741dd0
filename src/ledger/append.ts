import { canonicalJson } from '../lib/canonical-json.js';
import { isoAt } from '../lib/clock.js';
import type { LedgerParts } from './context.js';
import { leafHash } from './merkle.js';
import type { AppendedRecord, LedgerEvent } from './records.js';
import type { WaitingKey } from './repo.js';
import type { LedgerSubscriber } from './subscribers.js';

/**
 * Appending to a workspace's ledger, and the subscribers called with each record.
 * Rules:
 * - An append runs inside the caller's store.write(): it writes the record as a waiting entry
 *   under a key no other append shares, [wid, appendedAtMs, seq, id], and reads nothing of the
 *   ledger. So a decision and its record commit together or not at all, and two decisions never
 *   conflict over the ledger (no head is read or written: integrate.ts gives records their index).
 * - `seq` counts this process's appends, so that appends of one process (one write's included,
 *   even a `Promise.all` over `record`) wait, and are integrated, in the order they were made.
 * - The stored value is the exact RFC 8785 bytes of the appended record (no index yet), with its
 *   RFC 9162 leaf hash: durable and hashed before it is integrated.
 * - The subscribers (subscribers.ts) are given once, in order, before the first record; each is
 *   called with each record in its write, after the record is written.
 */

/** This process's appends, counted: the second part of a waiting key's order. */
let seq = 0;

/** The append of one ledger and its subscribers: `subscribe` once, then `record` in writes. */
export function createAppend(parts: LedgerParts): {
  subscribe(ordered: readonly LedgerSubscriber[]): void;
  record(event: LedgerEvent, options?: { id?: string }): Promise<AppendedRecord>;
} {
  const { clock, ids, repo } = parts;
  let subscribers: readonly LedgerSubscriber[] | null = null;
  // Subscribers given after a record was appended would have missed it: refused.
  let appended = false;

  return {
    subscribe(ordered) {
      if (subscribers) throw new Error('the ledger has its subscribers already');
      if (appended) throw new Error('the ledger takes its subscribers before its first record');
      subscribers = Object.freeze([...ordered]);
    },

    async record(event, options = {}) {
      const now = clock.now();
      const record: AppendedRecord = { id: options.id ?? ids.id('evr'), at: isoAt(now), ...event };
      const bytes = canonicalJson(record);
      seq += 1;
      const key: WaitingKey = [event.workspaceId, now, seq, record.id];
      await repo.putWaiting(key, { bytes, leaf: leafHash(bytes).toString('base64url') });
      appended = true;
      for (const subscriber of subscribers ?? []) await subscriber.onRecordInWrite(record);
      return record;
    },
  };
}
