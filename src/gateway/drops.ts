import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/log.js';

/**
 * What a bounded queue of the gateway dropped, counted and logged.
 * Rules:
 * - Every drop is counted, in total and per workspace (a workspace's admin sees its own count in
 *   GET /v1/admin/upstreams, never another workspace's).
 * - The log is rate-limited: the first drop is logged at once, later ones at most once per
 *   `everyMs` with how many were dropped since the last line, so a full queue under load writes a
 *   few lines, not one per request. `report()` logs what is still unlogged (at shutdown).
 */
export const DROP_LOG_EVERY_MS = 10_000;

export interface DropCounter {
  /** Counts one drop of a record of workspace `wid`. */
  drop(wid: string): void;
  /** Drops of this workspace's records since the process started. */
  dropped(wid: string): number;
  /** Drops of every workspace's records since the process started. */
  total(): number;
  /** Logs the drops not yet logged, if any. */
  report(): void;
}

export function createDropCounter(deps: {
  log: Logger;
  clock: Clock;
  /** Names what is dropped in the log line, e.g. "call records". */
  what: string;
  capacity: number;
  everyMs?: number;
}): DropCounter {
  const byWorkspace = new Map<string, number>();
  let total = 0;
  let unlogged = 0;
  let nextLogAt = -Infinity;
  const line = () => {
    deps.log.warn(
      { dropped: unlogged, droppedTotal: total, capacity: deps.capacity },
      `${deps.what}: the queue is full (the store is not keeping up), so ${unlogged} were dropped`,
    );
    unlogged = 0;
  };
  return {
    drop(wid) {
      byWorkspace.set(wid, (byWorkspace.get(wid) ?? 0) + 1);
      total += 1;
      unlogged += 1;
      const now = deps.clock.now();
      if (now >= nextLogAt) {
        line();
        nextLogAt = now + (deps.everyMs ?? DROP_LOG_EVERY_MS);
      }
    },
    dropped: (wid) => byWorkspace.get(wid) ?? 0,
    total: () => total,
    report() {
      if (unlogged > 0) line();
    },
  };
}
