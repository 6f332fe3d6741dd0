import type { Store } from '../store/index.js';
import type { PlanRecord } from './records.js';

/** Subscription records, [wid, subscriptionId]. Writes only inside store.write(). */
export function plansRepo(store: Store) {
  const t = store.tables;
  return {
    get(wid: string, subscriptionId: string): Promise<PlanRecord | undefined> {
      return t.subscriptions.get([wid, subscriptionId]);
    },
    has(wid: string, subscriptionId: string): Promise<boolean> {
      return t.subscriptions.has([wid, subscriptionId]);
    },
    async put(record: PlanRecord): Promise<void> {
      await t.subscriptions.put([record.workspaceId, record.subscriptionId], record);
    },
    /** The workspace's subscriptions. */
    async of(wid: string): Promise<PlanRecord[]> {
      return (await t.subscriptions.scan([wid])).map((e) => e.value);
    },
    /** Every workspace's subscriptions (one record each). */
    async all(): Promise<PlanRecord[]> {
      return (await t.subscriptions.scan([])).map((e) => e.value);
    },
  };
}
