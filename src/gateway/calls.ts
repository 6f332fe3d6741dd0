import type { Logger } from '../lib/log.js';
import type { CallRecord, Store } from '../store/index.js';

/**
 * Call records, tasks and the monthly request count, written off the hot path.
 * Rules:
 * - A call's answer never waits for its record: records queue in memory and are written together
 *   every `flushMs` (or at `batch` records), in one transaction, and at shutdown.
 * - Reads that must see what is queued do: a task id handed out a moment ago is known at once,
 *   and the monthly count and a budget's spend include what is not written yet.
 * - Only the server writes these tables (no command does), so the counters it holds are the truth:
 *   each is read from the store once, then kept here and written whole at each flush. A counter
 *   is never a sum of a stored value and a queue, which a flush in flight would count twice or
 *   not at all. (STYLE rule 7 forbids caching what another process writes; none does here.)
 * - A failed write is logged and its records kept for the next flush; nothing is dropped silently.
 */
export const monthOf = (iso: string): string => iso.slice(0, 7);

export function createCallLog(deps: { store: Store; log: Logger; flushMs?: number; batch?: number }) {
  const { store, log } = deps;
  const t = store.tables;
  let queue: CallRecord[] = [];
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
  let timer: NodeJS.Timeout | null = null;
  let flushing: Promise<void> | null = null;

  const flush = async (): Promise<void> => {
    if (timer) {
      clearTimeout(timer);
      timer = null;
    }
    if (flushing) await flushing;
    const dirty = [...counters].filter(([, c]) => c.dirty).map(([key, c]) => [key, c.total] as const);
    if (queue.length === 0 && newTasks.size === 0 && dirty.length === 0) return;
    const records = queue;
    const tasks = [...newTasks];
    for (const [key] of dirty) counters.get(key)!.dirty = false;
    queue = [];
    flushing = store
      .write(() => {
        for (const r of records) t.calls.put([r.workspaceId, r.id], r);
        for (const [key, at] of tasks) {
          const [wid, taskId] = key.split('\u0000') as [string, string];
          if (!t.tasks.has([wid, taskId])) t.tasks.put([wid, taskId], at);
        }
        for (const [key, total] of dirty) {
          const [table, ...parts] = partsOf(key);
          t[table].put(parts, total);
        }
      })
      .then(
        () => {
          for (const [key] of tasks) newTasks.delete(key);
        },
        (err: unknown) => {
          log.error({ err, records: records.length }, 'call records could not be written; kept for the next flush');
          queue = [...records, ...queue];
          for (const [key] of dirty) counters.get(key)!.dirty = true;
        },
      )
      .finally(() => {
        flushing = null;
      });
    await flushing;
  };

  const schedule = () => {
    if (queue.length >= (deps.batch ?? 256)) void flush();
    else if (!timer) timer = setTimeout(() => void flush(), deps.flushMs ?? 50);
  };

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
      if (!newTasks.has(key)) newTasks.set(key, at);
      schedule();
    },
    record(call: CallRecord): void {
      queue.push(call);
      schedule();
    },
    flush,
    page(wid: string, options: { after?: string; limit: number }): CallRecord[] {
      return t.calls
        .scan([wid], { ...(options.after ? { after: options.after } : {}), limit: options.limit })
        .map((e) => e.value);
    },
  };
}

export type CallLog = ReturnType<typeof createCallLog>;
