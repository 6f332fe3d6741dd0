/**
 * When the retrying senders (outbound webhooks and chat cards, the reports of deployment decisions
 * to GitHub) and the retention sweeper work: the wait before a sender's next try, and the loop that
 * runs a piece of work now and then. The sending itself is outbound.ts.
 */

/** The wait before try `tries + 1`: base × 2^(tries-1), capped, with ±20% jitter. */
export function retryDelay(tries: number, backoff: { backoffBaseMs: number; backoffMaxMs: number }): number {
  const base = Math.min(backoff.backoffMaxMs, backoff.backoffBaseMs * 2 ** Math.max(0, tries - 1));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/**
 * Runs `work` every `everyMs` once started, never two at once (a run still going skips a tick);
 * a failure goes to `onError` and the next tick runs again. `stop` waits for a run in progress.
 */
export function periodic(work: () => Promise<unknown>, everyMs: number, onError: (err: unknown) => void = () => {}) {
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  return {
    start(): void {
      if (timer) return;
      timer = setInterval(() => {
        if (running) return;
        running = work()
          .then(() => undefined, onError)
          .finally(() => {
            running = null;
          });
      }, everyMs);
      timer.unref();
    },
    async stop(): Promise<void> {
      if (timer) clearInterval(timer);
      timer = null;
      await running;
    },
  };
}
