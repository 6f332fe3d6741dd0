import type { Clock } from '../lib/clock.js';

/**
 * Fixed one-minute windows per key (a client address, an agent). Memory is bounded: windows
 * that ended are dropped when the table is swept, at most once per window.
 */
export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

/**
 * At most `maxKeys` windows are kept: past that, the oldest windows are dropped (Map order is
 * insertion order), so an attacker rotating addresses costs bounded memory. Dropping a window can
 * only hand a key a fresh budget early, never refuse anyone wrongly.
 */
export interface RateLimiter {
  /**
   * Counts one request of `key` in its window, against `limit` when given (a key with a limit of
   * its own), else the limiter's; refused (`allowed: false`) once the window's count is reached.
   * Reads and writes only the limiter's own memory.
   */
  take(key: string, limit?: number): RateDecision;
}

export function createRateLimiter(options: {
  limit: number;
  windowMs?: number;
  clock: Clock;
  maxKeys?: number;
}): RateLimiter {
  const windowMs = options.windowMs ?? 60_000;
  const maxKeys = options.maxKeys ?? 100_000;
  const windows = new Map<string, { start: number; count: number }>();
  let lastSweep = 0;

  return {
    take(key: string, limit = options.limit): RateDecision {
      const now = options.clock.now();
      if (now - lastSweep > windowMs) {
        for (const [k, w] of windows) if (now - w.start >= windowMs) windows.delete(k);
        lastSweep = now;
      }
      let w = windows.get(key);
      if (!w || now - w.start >= windowMs) {
        w = { start: now, count: 0 };
        windows.delete(key);
        windows.set(key, w);
        if (windows.size > maxKeys) windows.delete(windows.keys().next().value!);
      }
      const resetSeconds = Math.max(1, Math.ceil((w.start + windowMs - now) / 1000));
      if (w.count >= limit) return { allowed: false, limit, remaining: 0, resetSeconds };
      w.count += 1;
      return { allowed: true, limit, remaining: limit - w.count, resetSeconds };
    },
  };
}
