import type { AppendedRecord } from './records.js';

/**
 * The contract between the ledger and what must happen with its records, in the same transaction
 * (the webhook outbox's deliveries, a chat card's buttons). The composition root (app.ts) gives
 * the ledger its subscribers once, as an ordered list; for every record appended, the ledger
 * calls each in that order, inside the store write that appends the record, once the record and
 * the ledger's head are written. What a subscriber writes commits with the record, or neither
 * does: a decision is never stored without its deliveries, nor a delivery without its decision.
 *
 * A subscriber runs INSIDE the write: the caller's store.write() that appends the record (the
 * gate's decision, an approval, a person's change, ...). Because a backend may run a write
 * function more than once (it retries on a conflict with a concurrent writer), a subscriber may
 * be called MORE THAN ONCE for what ends up as one record: each run but the last is undone, its
 * store writes with it. So, inside `onRecordInWrite`, a subscriber may:
 * - read and write the store's tables, awaiting each (the store it was built with: inside the
 *   write, reads see and writes join the record's transaction);
 * - read the clock, and make ids and random values: if the write function runs again, it makes
 *   new ones, and only the last run's writes are kept.
 *
 * It must not:
 * - reach the network, sign, log, count metrics, or start timers or other work that outlives the
 *   call (a promise left running included): only its store writes are undone when the write runs
 *   again or fails, so anything else would happen twice, or for a record that never committed;
 * - keep state in memory (a counter, a cache) that a second run would count twice, or that a
 *   transaction rolled back would leave behind;
 * - append to the ledger itself: records are what callers decide, not what subscribers react to;
 * - throw for control flow: a record of a kind it does not handle, or a workspace that has not
 *   set it up, is a plain return. A throw (a rejected promise) aborts the whole write, the
 *   caller's decision and its record included, so it is only for a broken invariant.
 *
 * The ledger awaits each subscriber, in order, before the next and before `record` resolves.
 */
export interface LedgerSubscriber {
  /**
   * Called with each record appended, inside the write that appends it, and awaited: it may run
   * more than once for one record (see the rules above).
   */
  onRecordInWrite(record: AppendedRecord): Promise<void>;
}
