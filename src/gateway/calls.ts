import type { Clock } from '../lib/clock.js';
import { bounded, metrics } from '../lib/metrics.js';
import type { Logger } from '../lib/log.js';
import type { CallRecord, Store } from '../store/index.js';
import { createDropCounter } from './drops.js';
import { createWriteBehind } from './write-behind.js';

/**
 * Call records, tasks and the monthly request count, written off the hot path.
 * Rules:
 * - A call's answer never waits for its record: records queue in memory and are written together
 *   every `flushMs` (or at `batch` records), in one transaction, and at shutdown (write-behind.ts).
 * - Reads that must see what is queued do: a task id handed out a moment ago is known at once,
 *   and the monthly count and a budget's spend include what is not written yet.
 * - Only the server writes these tables (no command does), so the counters it holds are the truth:
 *   each is read from the store once, then kept here and written whole at each flush. A counter
 *   is never a sum of a stored value and a queue, which a flush in flight would count twice or
 *   not at all. (STYLE rule 7 forbids caching what another process writes; none does here.)
 * - A failed write is logged and its records kept for the next try.
 * - Memory is bounded: at most `capacity` call records (queued and being written together), and
 *   as many new task ids, wait. A slow or full disk cannot grow it further: past that, a new call
 *   record (or a new task id) is dropped, counted (in total and per workspace, shown in
 *   GET /v1/admin/upstreams) and logged at most once per 10 s. The counters (monthly requests,
 *   budget spend) are a few numbers per workspace and are never dropped, so plan limits and
 *   budgets still hold while records are dropped.
 */
export const monthOf = (iso: string): string => iso.slice(0, 7);

/** Call records that may wait to be written (about 1 KB each: some 10 MB at most). */
export const CALL_QUEUE_CAPACITY = 10_000;

interface Batch {
  records: CallRecord[];
  tasks: Array<[string, string]>;
  dirty: Array<readonly [string, number]>;
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
  const t = store.tables;
  const capacity = deps.capacity ?? CALL_QUEUE_CAPACITY;
  let queue: CallRecord[] = [];
  let writing = 0;
  const newTasks = new Map<string, string>();
  // Counters by "monthlyRequests\0wid\0month" and "budgetSpend\0wid\0budId\0start".
  const counters = new Map<string, { total: number; dirty: boolean }>();
  const partsOf = (key: string) => key.split('\u0000') as ['monthlyRequests' | 'budgetSpend', ...string[]];
  const counter = (key: string) => {
    let c = counters.get(key);
    if (!c) {
      const [table, ...parts] = partsOf(key);
      counters.set(key, (c = { total: t[table].get(parts) ?? 0, dirty: false }));
    }
    return c;
  };
  const add = (key: string, n: number) => {
    const c = counter(key);
    c.total += n;
    c.dirty = true;
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
      const dirty = [...counters].filter(([, c]) => c.dirty).map(([key, c]) => [key, c.total] as const);
      if (queue.length === 0 && newTasks.size === 0 && dirty.length === 0) return null;
      for (const [key] of dirty) counters.get(key)!.dirty = false;
      const batch = { records: queue, tasks: [...newTasks], dirty };
      writing = queue.length;
      queue = [];
      return batch;
    },
    write({ records, tasks, dirty }) {
      for (const r of records) t.calls.put([r.workspaceId, r.id], r);
      for (const [key, at] of tasks) {
        const [wid, taskId] = key.split('\u0000') as [string, string];
        if (!t.tasks.has([wid, taskId])) t.tasks.put([wid, taskId], at);
      }
      for (const [key, total] of dirty) {
        const [table, ...parts] = partsOf(key);
        t[table].put(parts, total);
      }
    },
    written({ tasks }) {
      writing = 0;
      for (const [key] of tasks) newTasks.delete(key);
    },
    failed({ records, dirty }) {
      writing = 0;
      queue = [...records, ...queue];
      for (const [key] of dirty) counters.get(key)!.dirty = true;
    },
  });
  const schedule = () => behind.queued(queue.length);

  return {
    /** Counts one request against the month now (before it is answered), so racing requests see it. */
    countRequest(wid: string, at: string): void {
      add(`monthlyRequests\u0000${wid}\u0000${monthOf(at)}`, 1);
      schedule();
    },
    requestsThisMonth(wid: string, at: string): number {
      return counter(`monthlyRequests\u0000${wid}\u0000${monthOf(at)}`).total;
    },
    addSpend(wid: string, budgetId: string, periodStart: string, micros: number): void {
      if (micros <= 0) return;
      add(`budgetSpend\u0000${wid}\u0000${budgetId}\u0000${periodStart}`, micros);
      schedule();
    },
    /** Micro-dollars a budget has spent in a period: written, and queued to be written. */
    spent(wid: string, budgetId: string, periodStart: string): number {
      return counter(`budgetSpend\u0000${wid}\u0000${budgetId}\u0000${periodStart}`).total;
    },
    taskKnown(wid: string, taskId: string): boolean {
      return newTasks.has(`${wid}\u0000${taskId}`) || t.tasks.has([wid, taskId]);
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
    /** Resolves once everything queued before the call is written (or its write failed). */
    async flush(): Promise<void> {
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
    page(wid: string, options: { after?: string; limit: number }): CallRecord[] {
      return t.calls
        .scan([wid], { ...(options.after ? { after: options.after } : {}), limit: options.limit })
        .map((e) => e.value);
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
