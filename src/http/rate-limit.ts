import type { Clock } from '../lib/clock.js';
import { counterKey, type WindowCounters } from '../store/counters.js';
import { StoreError } from '../store/errors.js';

/**
 * Fixed one-minute windows per key (a client address, an agent), counted in the store's shared
 * counters (store/counters.ts): every process and instance on one store counts into the same
 * window, so the limit holds in total, not per process. Windows are aligned to the clock (a
 * window starts at a multiple of its length), which is what lets separate processes agree on
 * which window a request falls in. Ended windows are swept by the counters.
 */
export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

/**
 * A limit shared by every process on the store. A count the store cannot make (its database
 * unreachable, its counters' file unusable) rejects with the store's error, which the HTTP layer
 * answers with 503 and retry-after: a limit never lets everything through, nor answers 500.
 * One exception: a disk below the store's reserve (StoreError 'no_space'). Writes are refused
 * then anyway, and reads and health must keep answering, so the limiter counts in this process's
 * memory until the counters can count again: the limit then holds per process, not in total.
 */
export interface RateLimiter {
  /**
   * Counts one request of `key` in its window, against `limit` when given (a key with a limit of
   * its own), else the limiter's; refused (`allowed: false`) once the window's count is reached.
   * Reads and writes only the store's counters, under the limiter's scope.
   */
  take(key: string, limit?: number): Promise<RateDecision>;
}

/** Keys counted in memory per window while the disk is full, at most. */
const MAX_FALLBACK_KEYS = 100_000;

export function createRateLimiter(options: {
  limit: number;
  /** The limit's name in the counters: limiters of one scope share their windows. */
  scope: string;
  counters: WindowCounters;
  windowMs?: number;
  clock: Clock;
}): RateLimiter {
  const windowMs = options.windowMs ?? 60_000;
  // The counts made while the disk is full, this window's only (bounded: older windows dropped).
  let fallback = { end: 0, counts: new Map<string, number>() };
  const countHere = (key: string, end: number, limit: number) => {
    if (fallback.end !== end) fallback = { end, counts: new Map() };
    const count = fallback.counts.get(key) ?? 0;
    if (count >= limit) return { allowed: false, count };
    if (fallback.counts.size < MAX_FALLBACK_KEYS || fallback.counts.has(key)) fallback.counts.set(key, count + 1);
    return { allowed: true, count: count + 1 };
  };
  return {
    async take(key: string, limit = options.limit): Promise<RateDecision> {
      const now = options.clock.now();
      const end = Math.floor(now / windowMs) * windowMs + windowMs;
      const resetSeconds = Math.max(1, Math.ceil((end - now) / 1000));
      const k = counterKey(key);
      const { allowed, count } = await options.counters.hit(options.scope, k, { end, now }, limit).catch((err) => {
        if (err instanceof StoreError && err.code === 'no_space') return countHere(k, end, limit);
        throw err;
      });
      return { allowed, limit, remaining: allowed ? Math.max(0, limit - count) : 0, resetSeconds };
    },
  };
}
