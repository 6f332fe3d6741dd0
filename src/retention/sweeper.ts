import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/log.js';
import { periodic } from '../lib/schedule.js';
import type { KeyPart, Store, Table, Tables } from '../store/index.js';
import { sweepRepo } from './repo.js';

/**
 * The one background sweeper. Every table whose records have a window (single-use identifiers,
 * codes, sessions: see policy.ts) or a retention (operational logs) is a job; one timer runs the
 * jobs one after another.
 * Rules:
 * - Nothing inside its window is removed: a job's `expired(entry, now)` is asked when the entry
 *   is read, and again inside the write that removes it, against the same `now` (the injected
 *   clock). A record rewritten meanwhile is judged by what it holds then.
 * - Bounded: a run looks at no more than `maxPerRun` entries of each table, in pages of `batch`;
 *   a page's expired entries go in one write of at most `batch` removals, so the write lock is
 *   never held long, and the event loop is yielded between pages. A table larger than that is
 *   walked over several runs from a cursor kept in memory (a restart starts at the beginning
 *   again: that costs reads, never a record).
 * - Idempotent and cheap when two instances on one database run it at once: each re-checks inside
 *   its own write, and removing what the other already removed changes nothing; the worst is
 *   twice the reads. (A lease, so that one instance sweeps at a time, comes with running many
 *   instances; nothing here depends on it.)
 * - One job failing (a write refused) is logged and the other jobs still run.
 * - The ledger and its checkpoints are never a job.
 */

type ValueOf<K extends keyof Tables> = Tables[K] extends Table<infer V> ? V : never;

export interface SweepEntry<V> {
  key: KeyPart[];
  value: V;
}

export interface SweepJob<K extends keyof Tables = keyof Tables> {
  table: K;
  /** Whether the entry is past its window at `now` (ms): a pure function of the entry and `now`. */
  expired(entry: SweepEntry<ValueOf<K>>, now: number): boolean;
  /** Inside the write that removes an entry: removes what is kept beside it (an index row), through `remove`. */
  alongside?(
    entry: SweepEntry<ValueOf<K>>,
    remove: (table: keyof Tables, key: KeyPart[]) => Promise<void>,
  ): Promise<void>;
}

/** A typed job (the union of every table's job is what the sweeper takes). */
export function sweepJob<K extends keyof Tables>(job: SweepJob<K>): SweepJob {
  return job as unknown as SweepJob;
}

export interface SweepReport {
  /** Per table: entries looked at and removed in this run. */
  tables: Record<string, { examined: number; removed: number }>;
  removed: number;
}

export interface SweeperOptions {
  store: Store;
  clock: Clock;
  log: Logger;
  jobs: SweepJob[];
  /** How often the background run starts (a run still going skips a tick). */
  everyMs: number;
  /** Entries looked at per page, and the most removed in one write. */
  batch: number;
  /** Entries looked at per table per run. */
  maxPerRun: number;
}

const yieldToOthers = () => new Promise<void>((resolve) => setImmediate(resolve));

export function createSweeper(options: SweeperOptions): Sweeper {
  const { store, clock, log, jobs, batch, maxPerRun } = options;
  const cursors = new Map<string, KeyPart[]>();
  const repo = sweepRepo(store);

  const sweepTable = async (job: SweepJob): Promise<{ examined: number; removed: number }> => {
    let examined = 0;
    let removed = 0;
    while (examined < maxPerRun) {
      const from = cursors.get(job.table);
      const limit = Math.min(batch, maxPerRun - examined);
      const page = await repo.page(job.table, from, limit);
      examined += page.length;
      if (page.length < limit) cursors.delete(job.table);
      else cursors.set(job.table, page.at(-1)!.key);
      const now = clock.now();
      const stale = page.filter((entry) => job.expired(entry as never, now));
      if (stale.length > 0) {
        removed += await store.write(async () => {
          let n = 0;
          for (const { key } of stale) {
            const value = await repo.get(job.table, key);
            if (value === undefined || !job.expired({ key, value } as never, now)) continue;
            await repo.remove(job.table, key);
            await job.alongside?.({ key, value } as never, repo.remove);
            n += 1;
          }
          return n;
        });
      }
      if (page.length < limit) break;
      await yieldToOthers();
    }
    return { examined, removed };
  };

  /** One run over every job; what it looked at and removed. */
  const run = async (): Promise<SweepReport> => {
    const perTable: SweepReport['tables'] = {};
    const report: SweepReport = { tables: perTable, removed: 0 };
    for (const job of jobs) {
      try {
        const done = await sweepTable(job);
        perTable[job.table] = done;
        report.removed += done.removed;
      } catch (err) {
        log.error({ err, table: job.table }, 'sweep failed; the next run tries again');
      }
    }
    if (report.removed > 0) {
      const removed = Object.fromEntries(
        Object.entries(perTable)
          .filter(([, v]) => v.removed > 0)
          .map(([k, v]) => [k, v.removed]),
      );
      log.info({ removed }, 'swept records past their window');
    }
    return report;
  };

  const loop = periodic(run, options.everyMs, (err) => log.error({ err }, 'sweep failed'));

  return {
    run,
    /** Starts the background runs (the server does; commands that open the store do not). */
    start: loop.start,
    /** Stops them, waiting for a run in progress. */
    stop: loop.stop,
    /** The tables swept, in the order a run takes them. */
    tables: jobs.map((j) => j.table),
  };
}

/** The retention sweeper (the rules above): removes what the policy says has expired, table by table. */
export interface Sweeper {
  /** One run now: what it removed, table by table. */
  run(): Promise<SweepReport>;
  /** Starts the background runs (the server does; commands that open the store do not). */
  start(): void;
  /** Stops them, waiting for a run in progress. */
  stop(): Promise<void>;
  /** The tables swept, in the order a run takes them. */
  readonly tables: ReadonlyArray<keyof Tables>;
}
