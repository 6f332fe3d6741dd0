import { createHash } from 'node:crypto';

/**
 * Counters of fixed windows, shared by every process that opens the same store: what the rate
 * limits count (http/rate-limit.ts), so that `svc serve --workers N` and N instances on one
 * PostgreSQL database allow one limit in all, not N.
 *
 * Where the counts live, and what a crash loses (docs/operations.md#past-one-machine):
 * - LMDB: a file of its own beside the store, `counters.mdb` (counters-lmdb.ts), which every worker
 *   opens; its commits are never flushed to disk (a count is one small write inside LMDB's write
 *   lock, no fsync). A process that dies loses nothing (the pages are the kernel's); a machine
 *   that crashes may lose the last counts, or the whole file, which is then made again empty:
 *   every key gets a fresh window early, nobody is refused wrongly.
 * - PostgreSQL: rows of the `rateCounters` table (tables.ts) in the store's one table, counted by
 *   one statement (an UPSERT that adds one only below the limit and returns the count), committed
 *   without waiting for the WAL flush (`synchronous_commit = off` on the counters' own
 *   connections): a database crash may lose the last counts of the current window.
 * - The key is [window end ms, scope, key]: windows end in key order, so a sweep removes the ended
 *   ones from the start of the table, a bounded batch at a time, at most once a second per process.
 * A counter that cannot count (the database unreachable, the disk full) throws a StoreError: the
 * limit fails closed with the documented 503, never allowing everything and never a 500.
 */
export interface WindowCounters {
  /**
   * Counts one hit of `key` in `scope`'s window that ends at `windowEnd` (ms since the epoch),
   * unless its count has reached `limit`: `allowed` and the count after it (at most `limit`).
   * `now` (the caller's clock) says which windows have ended, for the sweep. Reads and writes only
   * the counters (no transaction of the store's, which it never joins).
   */
  hit(
    scope: string,
    key: string,
    window: { end: number; now: number },
    limit: number,
  ): Promise<{ allowed: boolean; count: number }>;
  /** Ends the counters' own connections or files. */
  close(): Promise<void>;
}

/** A key as counters store it: longer ones (an email, an address) by their SHA-256, so every key fits. */
export function counterKey(key: string): string {
  return key.length <= 128 ? key : `sha256:${createHash('sha256').update(key).digest('hex')}`;
}

/**
 * Counts in this process's memory only, for a limiter no other process shares (unit tests of
 * the limiter itself); the server never uses it. At most `maxKeys` windows are kept: past that, the
 * oldest are dropped (Map order is insertion order), which can only hand a key a fresh budget early.
 */
export function memoryCounters(options: { maxKeys?: number } = {}): WindowCounters {
  const maxKeys = options.maxKeys ?? 100_000;
  const windows = new Map<string, { end: number; count: number }>();
  return {
    async hit(scope, key, { end: windowEnd }, limit) {
      const id = `${scope}\u0000${key}`;
      let w = windows.get(id);
      if (!w || w.end !== windowEnd) {
        if (windows.size >= maxKeys)
          for (const [k, old] of windows) if (old.end < windowEnd || windows.size >= maxKeys) windows.delete(k);
        w = { end: windowEnd, count: 0 };
        windows.delete(id);
        windows.set(id, w);
      }
      if (w.count >= limit) return { allowed: false, count: w.count };
      w.count += 1;
      return { allowed: true, count: w.count };
    },
    async close() {},
  };
}
