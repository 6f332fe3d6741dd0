import { request, type Dispatcher } from 'undici';
import { refusedBy } from './safe-target.js';

/**
 * What every retrying sender of the integrations shares (outbound webhooks and chat cards, the
 * reports of deployment decisions to GitHub): one try of a POST, the wait before the next try,
 * and the loop that runs a sender's work now and then.
 */

/** One POST with one deadline for connect, headers and body: its status, or why there is none. */
export async function postOnce(
  url: string,
  init: { headers: Record<string, string>; body: string; dispatcher: Dispatcher; timeoutMs: number },
): Promise<{ status: number | null; error: string | null }> {
  try {
    const answer = await request(url, {
      method: 'POST',
      body: init.body,
      headers: init.headers,
      dispatcher: init.dispatcher,
      headersTimeout: init.timeoutMs,
      bodyTimeout: init.timeoutMs,
      signal: AbortSignal.timeout(init.timeoutMs),
    });
    await answer.body.dump().catch(() => {});
    return { status: answer.statusCode, error: null };
  } catch (err) {
    const refused = refusedBy(err);
    const timedOut = (err as Error).name === 'TimeoutError' || /timeout/i.test((err as Error).message);
    return { status: null, error: refused ? refused.message : timedOut ? 'timed out' : 'could not connect' };
  }
}

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
