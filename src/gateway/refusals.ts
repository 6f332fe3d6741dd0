import { canonicalJson } from '../lib/canonical-json.js';
import type { Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import type { Logger } from '../lib/log.js';
import type { Ledger, LedgerEvent } from '../ledger/service.js';
import type { Store } from '../store/index.js';
import { createDropCounter } from './drops.js';
import { createWriteBehind } from './write-behind.js';

/**
 * The gateway's refusals as ledger records (docs/gateway.md "Refusals are evidence"; the error's `evidenceRecord`), written off the
 * hot path.
 * Rules:
 * - A refusal is answered without waiting for the store: its record gets its `evr_` id at once
 *   (the error's `evidenceRecord`) and is queued; queued records are appended together, in one
 *   transaction, within `flushMs` (50 ms), or at once when `batch` wait, and at shutdown.
 * - The id is handed out before the record is durable. The window is one flush: a crash (power
 *   loss, kill -9) in those ~50 ms loses the records queued in it, and their ids name nothing.
 *   A clean stop (SIGTERM) writes them before the store closes, then signs a checkpoint.
 * - A failed write keeps its records and is tried again after `retryMs`.
 * - Memory is bounded, and evidence is preferred: when `capacity` records already wait, a new
 *   refusal waits for room (the refused caller, not anyone else, is slowed: a runaway agent that
 *   retries its refusals is held back), up to `waitMs`, at most `capacity` callers at a time.
 *   Past that wait it is still refused, without `evidenceRecord` (no id is ever handed out for a
 *   record that will not be written), and the drop is counted (per workspace, in
 *   GET /v1/admin/upstreams) and logged at most once per 10 s. Blocking longer would tie every
 *   refused connection, and its request body, to a stalled disk: memory would grow all the same.
 * - A record is checked to be hashable (RFC 8785) when queued, so one record can never make a
 *   whole batch fail forever.
 */
export const REFUSAL_QUEUE_CAPACITY = 10_000;
export const REFUSAL_WAIT_MS = 2_000;

interface Queued {
  id: string;
  event: LedgerEvent;
}

interface Waiter {
  event: LedgerEvent;
  resolve(id: string | null): void;
  timer: NodeJS.Timeout;
}

/** The refusal queue's bound and what one workspace lost to it since the process started. */
export interface RefusalQueue {
  capacity: number;
  dropped: number;
}

/**
 * The gateway's refusal evidence, queued off the hot path and appended to the ledger in
 * batches (the rules above). Writes ledger records (`gateway.call_refused`) through the ledger.
 */
export interface RefusalLog {
  /**
   * Queues one refusal's record; returns its id, or null when it was dropped (not hashable, or
   * no room within `waitMs`). A promise only when the queue is full.
   */
  record(event: LedgerEvent): string | null | Promise<string | null>;
  /** Resolves once every record queued before the call is written (or its write failed). */
  flush(): Promise<void>;
  /** The queue's bound and what this workspace lost to it since the process started. */
  queueOf(wid: string): RefusalQueue;
  /** The whole queue (every workspace): for the operator's logs and tests. */
  stats(): { capacity: number; queued: number; waiting: number; dropped: number; written: number };
}

export interface RefusalLogDeps {
  store: Store;
  ledger: Ledger;
  ids: IdSource;
  clock: Clock;
  log: Logger;
  capacity?: number;
  flushMs?: number;
  batch?: number;
  retryMs?: number;
  waitMs?: number;
  /** The store writes go through (tests stall or fail it); the store's own by default. */
  write?: Store['write'];
}

export function createRefusalLog(deps: RefusalLogDeps): RefusalLog {
  const { ledger, ids, log } = deps;
  const capacity = deps.capacity ?? REFUSAL_QUEUE_CAPACITY;
  const waitMs = deps.waitMs ?? REFUSAL_WAIT_MS;
  let queue: Queued[] = [];
  let writing = 0;
  let written = 0;
  let failures = 0;
  const waiting: Waiter[] = [];
  const drops = createDropCounter({ log, clock: deps.clock, what: 'gateway refusal records', capacity });

  const enqueue = (event: LedgerEvent): string => {
    const id = ids.id('evr');
    queue.push({ id, event });
    behind.queued(queue.length);
    return id;
  };
  const room = () => queue.length + writing < capacity;

  const behind = createWriteBehind<Queued[]>({
    store: { write: deps.write ?? ((fn) => deps.store.write(fn)) },
    log,
    what: 'gateway refusal records',
    flushMs: deps.flushMs ?? 50,
    batch: deps.batch ?? 256,
    ...(deps.retryMs === undefined ? {} : { retryMs: deps.retryMs }),
    take() {
      if (queue.length === 0) return null;
      const batch = queue;
      queue = [];
      writing = batch.length;
      return batch;
    },
    async write(batch) {
      // In order: each record chains onto the one before it.
      for (const { id, event } of batch) await ledger.record(event, { id });
    },
    written(batch) {
      writing = 0;
      written += batch.length;
      // Room again: the callers waiting for it are queued, first come first served.
      while (waiting.length > 0 && room()) {
        const w = waiting.shift()!;
        clearTimeout(w.timer);
        w.resolve(enqueue(w.event));
      }
    },
    failed(batch) {
      writing = 0;
      failures += 1;
      queue = [...batch, ...queue];
    },
  });

  return {
    record(event) {
      try {
        canonicalJson(event);
      } catch (err) {
        log.error({ err, kind: event.kind }, 'a gateway refusal record could not be hashed; not recorded');
        return null;
      }
      if (room() && waiting.length === 0) return enqueue(event);
      if (waitMs <= 0 || waiting.length >= capacity) {
        drops.drop(event.workspaceId);
        return null;
      }
      return new Promise<string | null>((resolve) => {
        const waiter: Waiter = {
          event,
          resolve,
          timer: setTimeout(() => {
            waiting.splice(waiting.indexOf(waiter), 1);
            drops.drop(event.workspaceId);
            resolve(null);
          }, waitMs),
        };
        waiting.push(waiter);
      });
    },

    async flush() {
      const failed = failures;
      await behind.flush();
      // Callers waiting for room were queued as that write ended: theirs are written too.
      for (let pass = 0; pass < 10 && queue.length > 0 && failures === failed; pass += 1) await behind.flush();
      drops.report();
    },

    queueOf(wid) {
      return { capacity, dropped: drops.dropped(wid) };
    },

    stats() {
      return { capacity, queued: queue.length + writing, waiting: waiting.length, dropped: drops.total(), written };
    },
  };
}
