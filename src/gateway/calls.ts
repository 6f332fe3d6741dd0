import type { Clock } from '../lib/clock.js';
import { bounded, metrics } from '../lib/metrics.js';
import type { Logger } from '../lib/log.js';
import type { CallRecord, Store } from '../store/index.js';
import { createDropCounter } from './drops.js';
import { gatewayRepo } from './repo.js';
import { createWriteBehind } from './write-behind.js';

/**
 * Call records and tasks, written off the hot path; the monthly request count and budget spend,
 * written as they change.
 * Rules:
 * - A call's answer never waits for its record: records queue in memory and are written together
 *   every `flushMs` (or at `batch` records), in one transaction, and at shutdown (write-behind.ts).
 * - Reads that must see what is queued do: a task id handed out a moment ago is known at once.
 * - The counters (the month's requests, a budget's spend in a period) are kept in the store only:
 *   every change reads, checks and writes the stored count in one write function, so two
 *   processes (`--workers`, or instances sharing PostgreSQL) racing on one count conflict and one
 *   retries; neither's count is lost and an allowance is never passed by both. Reads are of the
 *   store (STYLE rule 7: no cache of what another process writes).
 * - A failed write of records is logged and its records kept for the next try. A failed write of
 *   a counter rejects: the request that made it fails closed.
 * - Memory is bounded: at most `capacity` call records (queued and being written together), and
 *   as many new task ids, wait. A slow or full disk cannot grow it further: past that, a new call
 *   record (or a new task id) is dropped, counted (in total and per workspace, shown in
 *   GET /v1/admin/upstreams) and logged at most once per 10 s. The counters are never dropped, so
 *   plan limits and budgets still hold while records are dropped.
 */
export const monthOf = (iso: string): string => iso.slice(0, 7);

/** Call records that may wait to be written (about 1 KB each: some 10 MB at most). */
export const CALL_QUEUE_CAPACITY = 10_000;

interface Batch {
  records: CallRecord[];
  tasks: Array<[string, string]>;
}

export function createCallLog(deps: {
  store: Store;
  log: Logger;
  clock: Clock;
  flushMs?: number;
  batch?: number;
  capacity?: number;
  /** The store writes go through (tests stall or fail it); the store's own by default. */
  write?: Store['write'];
}) {
  const { store, log } = deps;
  const repo = gatewayRepo(store);
  const capacity = deps.capacity ?? CALL_QUEUE_CAPACITY;
  let queue: CallRecord[] = [];
  let writing = 0;
  const newTasks = new Map<string, string>();
  // Writes made after an answer was sent (afterAnswer), until they end.
  const late = new Set<Promise<void>>();
  const drops = createDropCounter({ log, clock: deps.clock, what: 'call records', capacity });
  const taskDrops = createDropCounter({ log, clock: deps.clock, what: 'new task ids', capacity });

  const behind = createWriteBehind<Batch>({
    store: { write: deps.write ?? ((fn) => store.write(fn)) },
    log,
    what: 'call records',
    flushMs: deps.flushMs ?? 50,
    batch: deps.batch ?? 256,
    take() {
      if (queue.length === 0 && newTasks.size === 0) return null;
      const batch = { records: queue, tasks: [...newTasks] };
      writing = queue.length;
      queue = [];
      return batch;
    },
    async write({ records, tasks }) {
      await Promise.all(records.map((r) => repo.putCall(r)));
      await Promise.all(
        tasks.map(async ([key, at]) => {
          const [wid, taskId] = key.split('\u0000') as [string, string];
          if (!(await repo.hasTask(wid, taskId))) await repo.putTask(wid, taskId, at);
        }),
      );
    },
    written({ tasks }) {
      writing = 0;
      for (const [key] of tasks) newTasks.delete(key);
    },
    failed({ records }) {
      writing = 0;
      queue = [...records, ...queue];
    },
  });
  const schedule = () => behind.queued(queue.length);

  return {
    /**
     * Counts one request against the month now (before it is answered), unless `allowed` requests
     * were already counted this month: then nothing is counted and the answer is false. Read,
     * checked and written in one write function, so racing requests (of any process) see each other.
     */
    async countRequest(wid: string, at: string, allowed: number | null = null): Promise<boolean> {
      const month = monthOf(at);
      return store.write(async () => {
        const n = await repo.monthlyRequests(wid, month);
        if (allowed !== null && n >= allowed) return false;
        await repo.putMonthlyRequests(wid, month, n + 1);
        return true;
      });
    },
    requestsThisMonth(wid: string, at: string): Promise<number> {
      return repo.monthlyRequests(wid, monthOf(at));
    },
    /** Adds to a budget's spend in a period: read and written in one write function. */
    async addSpend(wid: string, budgetId: string, periodStart: string, micros: number): Promise<void> {
      if (micros <= 0) return;
      await store.write(async () => {
        const spent = await repo.spent(wid, budgetId, periodStart);
        await repo.putSpent(wid, budgetId, periodStart, spent + micros);
      });
    },
    /** Micro-dollars a budget has spent in a period. */
    spent(wid: string, budgetId: string, periodStart: string): Promise<number> {
      return repo.spent(wid, budgetId, periodStart);
    },
    async taskKnown(wid: string, taskId: string): Promise<boolean> {
      return newTasks.has(`${wid}\u0000${taskId}`) || (await repo.hasTask(wid, taskId));
    },
    openTask(wid: string, taskId: string, at: string): void {
      const key = `${wid}\u0000${taskId}`;
      if (newTasks.has(key)) return;
      if (newTasks.size >= capacity) {
        taskDrops.drop(wid);
        return;
      }
      newTasks.set(key, at);
      schedule();
    },
    /** Queues a call record; drops it (counted, logged) when `capacity` records already wait. */
    record(call: CallRecord): void {
      countCall(call);
      if (queue.length + writing >= capacity) {
        drops.drop(call.workspaceId);
        return;
      }
      queue.push(call);
      schedule();
    },
    /**
     * Holds a write made after the answer was sent (a stream's spend, once it ended): a failure is
     * logged (no caller is left to tell), and `flush()` waits for it.
     */
    afterAnswer(work: Promise<void>, what: string): void {
      const done: Promise<void> = work
        .catch((err: unknown) => log.error({ err }, `${what} could not be written`))
        .finally(() => late.delete(done));
      late.add(done);
    },
    /** Resolves once everything queued before the call is written (or its write failed). */
    async flush(): Promise<void> {
      await Promise.all([...late]);
      await behind.flush();
      drops.report();
      taskDrops.report();
    },
    /** The queue's bound and what this workspace lost to it since the process started. */
    queueOf(wid: string): { capacity: number; dropped: number; tasksDropped: number } {
      return { capacity, dropped: drops.dropped(wid), tasksDropped: taskDrops.dropped(wid) };
    },
    /** The whole queue (every workspace): for the operator's logs and tests, not for a workspace's admin. */
    stats(): { capacity: number; queued: number; tasks: number; dropped: number; tasksDropped: number } {
      return {
        capacity,
        queued: queue.length + writing,
        tasks: newTasks.size,
        dropped: drops.total(),
        tasksDropped: taskDrops.total(),
      };
    },
    page(wid: string, options: { after?: string; limit: number }): Promise<CallRecord[]> {
      return repo.calls(wid, { ...(options.after ? { after: options.after } : {}), limit: options.limit });
    },
  };
}

export type CallLog = ReturnType<typeof createCallLog>;

/** The call's series: by the served model and provider (configured ids, so a bounded set), never by key or agent. */
function countCall(call: CallRecord): void {
  const model = bounded(call.model);
  const provider = bounded(call.provider);
  metrics.gatewayRequests.inc({ model, provider, outcome: call.outcome });
  if (call.inputTokens > 0) metrics.gatewayTokens.inc({ model, provider, direction: 'input' }, call.inputTokens);
  if (call.outputTokens > 0) metrics.gatewayTokens.inc({ model, provider, direction: 'output' }, call.outputTokens);
  if (call.costMicros > 0) metrics.gatewayCost.inc({ model, provider }, call.costMicros / 1_000_000);
}
