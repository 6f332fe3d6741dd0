import type { Clock } from '../lib/clock.js';
import { bounded, metrics } from '../lib/metrics.js';
import type { Logger } from '../lib/log.js';
import type { Store } from '../store/index.js';
import type { CallRecord } from './records.js';
import { createDropCounter } from './drops.js';
import { gatewayRepo } from './repo.js';
import { createWriteBehind } from './write-behind.js';

/**
 * Call records, tasks, the monthly request count and budget spend, written off the hot path
 * (but for a request under a monthly allowance, counted as it is admitted).
 * Rules:
 * - A call's answer never waits for its record: records queue in memory and are written together
 *   every `flushMs` (or at `batch` records), in one transaction, and at shutdown (write-behind.ts).
 * - Reads that must see what is queued do: a task id handed out a moment ago is known at once.
 * - The counters (the month's requests, a budget's spend in a period) are read and written in one
 *   write function, so two processes (`--workers`, or instances sharing PostgreSQL) racing on one
 *   count conflict and one retries: neither's count is lost. A request under a monthly allowance
 *   is counted before it goes on, the allowance checked in the same write function (one write
 *   each), so the last request of a month is never taken by two. A request under no allowance
 *   (null: unlimited), and a call's spend, have nothing to check: they are written behind with the
 *   records, this process's counts of the last `flushMs` added, in the records' write, to what the
 *   store holds (read inside it). Reads are of the store plus what this process has not written
 *   yet (never a cache of what another process writes); another process's spend is seen
 *   once it is written (within its `flushMs`).
 * - A failed write-behind is logged and what it held kept for the next try. A failed count under
 *   an allowance rejects: the request that made it fails closed.
 * - Memory is bounded: at most `capacity` call records (queued and being written together), and
 *   as many new task ids, wait. A slow or full disk cannot grow it further: past that, a new call
 *   record (or a new task id) is dropped, counted (in total and per workspace, shown in
 *   GET /v1/admin/upstreams) and logged at most once per 10 s. The counters are never dropped, so
 *   plan limits and budgets still hold while records are dropped.
 */
export const monthOf = (iso: string): string => iso.slice(0, 7);

const monthCounter = (wid: string, month: string) => `monthlyRequests\u0000${wid}\u0000${month}`;
const spendCounter = (wid: string, budgetId: string, periodStart: string) =>
  `budgetSpend\u0000${wid}\u0000${budgetId}\u0000${periodStart}`;

/** Call records that may wait to be written (about 1 KB each: some 10 MB at most). */
export const CALL_QUEUE_CAPACITY = 10_000;

interface Batch {
  records: CallRecord[];
  tasks: Array<[string, string]>;
  /** Counts to add to the stored ones, by counter (`counterOf`). */
  counts: Array<[string, number]>;
}

/** The call queue's bound and what one workspace lost to it since the process started. */
export interface CallQueue {
  capacity: number;
  dropped: number;
  tasksDropped: number;
}

/**
 * The call log: call records, task ids, the month's request count and budget spend, written
 * behind the answers (the rules above). Writes `calls`, `tasks`, `monthlyRequests` and
 * `budgetSpend`, and reads them (plus what this process has not written yet).
 */
export interface CallLog {
  /**
   * Counts one request against the month now (before it is answered). Under an allowance
   * (`allowed` not null), unless `allowed` requests were already counted this month (then nothing
   * is counted and the answer is false): read, checked and written in one write function, so
   * racing requests (of any process) see each other. Under none, written behind.
   */
  countRequest(wid: string, at: string, allowed?: number | null): Promise<boolean>;
  /** The month's requests: written, and counted here but not written yet. */
  requestsThisMonth(wid: string, at: string): Promise<number>;
  /** Adds to a budget's spend in a period (written behind; never dropped). */
  addSpend(wid: string, budgetId: string, periodStart: string, micros: number): void;
  /** Micro-dollars a budget has spent in a period: written, and not written yet. */
  spent(wid: string, budgetId: string, periodStart: string): Promise<number>;
  /** Whether the task id is the workspace's: written, or handed out here a moment ago. */
  taskKnown(wid: string, taskId: string): Promise<boolean>;
  /** Queues a new task id (dropped, counted, when `capacity` new ones already wait). */
  openTask(wid: string, taskId: string, at: string): void;
  /** Queues a call record; drops it (counted, logged) when `capacity` records already wait. */
  record(call: CallRecord): void;
  /** Resolves once everything queued before the call is written (or its write failed). */
  flush(): Promise<void>;
  /** The queue's bound and what this workspace lost to it since the process started. */
  queueOf(wid: string): CallQueue;
  /** The whole queue (every workspace): for the operator's logs and tests, not for a workspace's admin. */
  stats(): { capacity: number; queued: number; tasks: number; dropped: number; tasksDropped: number };
  /** A page of the workspace's written call records, in id order, after the id `after`. */
  page(wid: string, options: { after?: string; limit: number }): Promise<CallRecord[]>;
}

export interface CallLogDeps {
  store: Store;
  log: Logger;
  clock: Clock;
  flushMs?: number;
  batch?: number;
  capacity?: number;
  /** The store writes go through (tests stall or fail it); the store's own by default. */
  write?: Store['write'];
}

export function createCallLog(deps: CallLogDeps): CallLog {
  const { store, log } = deps;
  const repo = gatewayRepo(store);
  const capacity = deps.capacity ?? CALL_QUEUE_CAPACITY;
  let queue: CallRecord[] = [];
  let writing = 0;
  const newTasks = new Map<string, string>();
  // Counts not yet written, and those being written, by counter.
  let counts = new Map<string, number>();
  let countsWriting = new Map<string, number>();
  const unwritten = (counter: string): number => (counts.get(counter) ?? 0) + (countsWriting.get(counter) ?? 0);
  const count = (counter: string, n: number) => {
    counts.set(counter, (counts.get(counter) ?? 0) + n);
    schedule();
  };
  const drops = createDropCounter({ log, clock: deps.clock, what: 'call records', capacity });
  const taskDrops = createDropCounter({ log, clock: deps.clock, what: 'new task ids', capacity });

  const behind = createWriteBehind<Batch>({
    store: { write: deps.write ?? ((fn) => store.write(fn)) },
    log,
    what: 'call records',
    flushMs: deps.flushMs ?? 50,
    batch: deps.batch ?? 256,
    take() {
      if (queue.length === 0 && newTasks.size === 0 && counts.size === 0) return null;
      const batch = { records: queue, tasks: [...newTasks], counts: [...counts] };
      countsWriting = counts;
      counts = new Map();
      writing = queue.length;
      queue = [];
      return batch;
    },
    async write({ records, tasks, counts: counted }) {
      await Promise.all(records.map((r) => repo.putCall(r)));
      await Promise.all(
        counted.map(async ([counter, n]) => {
          const [table, wid, ...rest] = counter.split('\u0000') as [string, string, string, string?];
          if (table === 'monthlyRequests')
            await repo.putMonthlyRequests(wid, rest[0], (await repo.monthlyRequests(wid, rest[0])) + n);
          else await repo.putSpent(wid, rest[0], rest[1]!, (await repo.spent(wid, rest[0], rest[1]!)) + n);
        }),
      );
      await Promise.all(
        tasks.map(async ([key, at]) => {
          const [wid, taskId] = key.split('\u0000') as [string, string];
          if (!(await repo.hasTask(wid, taskId))) await repo.putTask(wid, taskId, at);
        }),
      );
    },
    written({ tasks }) {
      writing = 0;
      countsWriting = new Map();
      for (const [key] of tasks) newTasks.delete(key);
    },
    failed({ records, counts: counted }) {
      writing = 0;
      countsWriting = new Map();
      queue = [...records, ...queue];
      for (const [counter, n] of counted) counts.set(counter, (counts.get(counter) ?? 0) + n);
    },
  });
  const schedule = () => behind.queued(queue.length);

  return {
    async countRequest(wid, at, allowed = null) {
      const month = monthOf(at);
      if (allowed === null) {
        count(monthCounter(wid, month), 1);
        return true;
      }
      return store.write(async () => {
        const stored = await repo.monthlyRequests(wid, month);
        if (stored + unwritten(monthCounter(wid, month)) >= allowed) return false;
        await repo.putMonthlyRequests(wid, month, stored + 1);
        return true;
      });
    },
    async requestsThisMonth(wid, at) {
      const month = monthOf(at);
      return (await repo.monthlyRequests(wid, month)) + unwritten(monthCounter(wid, month));
    },
    addSpend(wid, budgetId, periodStart, micros) {
      if (micros <= 0) return;
      count(spendCounter(wid, budgetId, periodStart), micros);
    },
    async spent(wid, budgetId, periodStart) {
      return (await repo.spent(wid, budgetId, periodStart)) + unwritten(spendCounter(wid, budgetId, periodStart));
    },
    async taskKnown(wid, taskId) {
      return newTasks.has(`${wid}\u0000${taskId}`) || (await repo.hasTask(wid, taskId));
    },
    openTask(wid, taskId, at) {
      const key = `${wid}\u0000${taskId}`;
      if (newTasks.has(key)) return;
      if (newTasks.size >= capacity) {
        taskDrops.drop(wid);
        return;
      }
      newTasks.set(key, at);
      schedule();
    },
    record(call) {
      countCall(call);
      if (queue.length + writing >= capacity) {
        drops.drop(call.workspaceId);
        return;
      }
      queue.push(call);
      schedule();
    },
    async flush() {
      await behind.flush();
      drops.report();
      taskDrops.report();
    },
    queueOf(wid) {
      return { capacity, dropped: drops.dropped(wid), tasksDropped: taskDrops.dropped(wid) };
    },
    stats() {
      return {
        capacity,
        queued: queue.length + writing,
        tasks: newTasks.size,
        dropped: drops.total(),
        tasksDropped: taskDrops.total(),
      };
    },
    page(wid, options) {
      return repo.calls(wid, { ...(options.after ? { after: options.after } : {}), limit: options.limit });
    },
  };
}

/** The call's series: by the served model and provider (configured ids, so a bounded set), never by key or agent. */
function countCall(call: CallRecord): void {
  const model = bounded(call.model);
  const provider = bounded(call.provider);
  metrics.gatewayRequests.inc({ model, provider, outcome: call.outcome });
  if (call.inputTokens > 0) metrics.gatewayTokens.inc({ model, provider, direction: 'input' }, call.inputTokens);
  if (call.outputTokens > 0) metrics.gatewayTokens.inc({ model, provider, direction: 'output' }, call.outputTokens);
  if (call.costMicros > 0) metrics.gatewayCost.inc({ model, provider }, call.costMicros / 1_000_000);
}
