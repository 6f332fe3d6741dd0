import type { LedgerRecord } from './records.js';

/**
 * The contract between the ledger and what must happen with its records, in the same transaction
 * (the webhook outbox's deliveries, a chat card's buttons). The composition root (app.ts) gives
 * the ledger its subscribers once, as an ordered list; for every record appended, the ledger
 * calls each in that order, inside the store write that appends the record, once the record and
 * the ledger's head are written. What a subscriber writes commits with the record, or neither
 * does: a decision is never stored without its deliveries, nor a delivery without its decision.
 *
 * Inside `onRecordInWrite`, a subscriber may:
 * - read and write the store's tables (the store it was built with: inside the write, reads see
 *   and writes join the record's transaction);
 * - read the clock, and make ids and random values: if the write function runs again, it makes
 *   new ones, and only the last run's writes are kept.
 *
 * It must not:
 * - reach the network, sign, or start timers or other work that outlives the call (a promise left
 *   running included): a write function does nothing but store reads and writes, because once
 *   the store is async a backend may run it more than once, and only its store writes are undone;
 * - keep state in memory (a counter, a cache) that a second run would count twice, or that a
 *   transaction rolled back would leave behind;
 * - be async: it returns nothing, and nothing is awaited;
 * - append to the ledger itself: records are what callers decide, not what subscribers react to;
 * - throw for control flow: a record of a kind it does not handle, or a workspace that has not
 *   set it up, is a plain return. A throw aborts the whole write, the caller's decision and its
 *   record included, so it is only for a broken invariant.
 */
export interface LedgerSubscriber {
  /** Called with each record appended, inside the write that appends it (see the rules above). */
  onRecordInWrite(record: LedgerRecord): void;
}
