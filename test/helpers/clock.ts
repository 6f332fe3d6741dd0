import type { Clock } from '../../src/lib/clock.js';

/** A clock the test moves (time is injected, never slept on): time passes only when `advance` or `set` says so. */
export interface ManualClock extends Clock {
  advance(ms: number): void;
  set(ms: number): void;
}

/** Starts at `startMs` (now by default, so that what it stamps looks current to everything else). */
export function manualClock(startMs = Date.now()): ManualClock {
  let now = startMs;
  return {
    now: () => now,
    advance(ms) {
      now += ms;
    },
    set(ms) {
      now = ms;
    },
    // A wait the code asks for passes at once, as time moved by it.
    sleep(ms) {
      now += ms;
      return Promise.resolve();
    },
  };
}
