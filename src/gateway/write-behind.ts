import type { Logger } from '../lib/log.js';
import type { Store } from '../store/index.js';

/**
 * Writes queued in memory and committed later, together: the gateway's call records and its
 * refusal evidence. The queues own what they hold; this owns when it is written.
 * Rules:
 * - One write at a time. A batch is taken when a write starts (`take`), committed in one store
 *   transaction (`write`, store reads and writes only), then handed back (`written`, or `failed`
 *   so the queue can keep it for the next try).
 * - A write starts `flushMs` after the first queued item, at once when `batch` items wait, and
 *   whenever `flush()` is called. After a failed write, the next starts after `retryMs` (or an
 *   explicit `flush()`), so a failing store is tried, and logged, about once per `retryMs`.
 * - `flush()` resolves once everything queued before the call is written (or failed). Called
 *   while a write is in flight, every caller shares one follow-up write: a stalled store holds
 *   one pending promise, never one per request.
 */
export interface WriteBehind {
  /** Tells it `queued` items wait: starts a write now or arms the timer. */
  queued(queued: number): void;
  flush(): Promise<void>;
  /** Whether a write is in flight. */
  busy(): boolean;
}

export function createWriteBehind<B>(deps: {
  store: Pick<Store, 'write'>;
  log: Logger;
  /** Names what is written in a log line. */
  what: string;
  flushMs: number;
  batch: number;
  retryMs?: number;
  /** The batch to write now, or null when there is nothing to write. */
  take(): B | null;
  /** Runs inside the store's write (perhaps more than once: a conflict retries it): store reads and writes only. */
  write(batch: B): Promise<void>;
  written(batch: B): void;
  failed(batch: B): void;
}): WriteBehind {
  let timer: NodeJS.Timeout | null = null;
  let flushing: Promise<void> | null = null;
  let next: Promise<void> | null = null;
  // After a failed write, queued items wait for the retry instead of starting writes that would
  // fail (and log) as fast as requests arrive.
  let backingOff = false;

  const arm = (ms: number) => {
    if (!timer) timer = setTimeout(() => void flush(), ms);
  };

  const once = async (batch: B): Promise<void> => {
    try {
      await deps.store.write(() => deps.write(batch));
    } catch (err) {
      deps.log.error({ err }, `${deps.what} could not be written; kept for the next try`);
      deps.failed(batch);
      backingOff = true;
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => {
        timer = null;
        backingOff = false;
        void flush();
      }, deps.retryMs ?? 1000);
      return;
    }
    deps.written(batch);
  };

  const flush = (): Promise<void> => {
    if (timer) {
      clearTimeout(timer);
      timer = null;
    }
    backingOff = false;
    if (flushing) {
      next ??= flushing.then(() => {
        next = null;
        return flush();
      });
      return next;
    }
    const batch = deps.take();
    if (batch === null) return Promise.resolve();
    flushing = once(batch).finally(() => {
      flushing = null;
    });
    return flushing;
  };

  return {
    queued(queued) {
      if (backingOff) return;
      if (queued >= deps.batch) void flush();
      else arm(deps.flushMs);
    },
    flush,
    busy: () => flushing !== null,
  };
}
