import { request, type Dispatcher } from 'undici';
import { refusedBy } from './safe-target.js';

/**
 * What every retrying sender of the integrations shares (outbound webhooks and chat cards, the
 * reports of deployment decisions to GitHub): one try of a POST. The wait before the next try and
 * the loop that runs a sender's work now and then are in schedule.ts, without undici: a command
 * that opens the store builds the senders' services but never sends.
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
