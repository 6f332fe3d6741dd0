/** Time is injected so that tests move it instead of sleeping. */
export interface Clock {
  now(): number;
  /** Waits `ms` (a test's clock moves itself instead); absent: a real timer (`sleepOn`). */
  sleep?(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Waits `ms` on the clock; resolves early, never rejects, when `signal` aborts. */
export function sleepOn(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (clock.sleep) return clock.sleep(ms, signal);
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

export const systemClock: Clock = { now: () => Date.now() };

export function isoAt(ms: number): string {
  return new Date(ms).toISOString();
}
