import type { Store } from '../store/index.js';

/**
 * The store reads behind the gauges of GET /metrics, made at scrape time across every workspace.
 * Each is one pass over an index or a small table (pending approvals, the outbox, the ledger
 * heads, the stop-all states), except the agents' holds, which walks the agents.
 */
export function observabilityRepo(store: Store) {
  const t = store.tables;
  return {
    async approvalsWaiting(): Promise<number> {
      return (await t.pendingApprovals.scan([])).length;
    },
    async agentsStopped(): Promise<number> {
      let n = 0;
      for (const { value } of await t.agents.scan([]))
        if (value.removedAt === null && (value.holds?.length ?? 0) > 0) n += 1;
      return n;
    },
    async workspacesStoppedAll(): Promise<number> {
      return (await t.stopAll.scan([])).length;
    },
    /** Records in all ledgers, those not yet under a checkpoint, and the oldest wait since a checkpoint of those. */
    async ledger(nowMs: number): Promise<{ records: number; unCheckpointed: number; secondsSinceCheckpoint: number }> {
      let records = 0;
      let unCheckpointed = 0;
      let oldestMs = nowMs;
      const behind: string[] = [];
      for (const { key, value } of await t.ledgerHeads.scan([])) {
        records += value.size;
        if (value.size <= value.checkpointSize) continue;
        unCheckpointed += value.size - value.checkpointSize;
        behind.push(String(key[0]));
      }
      const lasts = await Promise.all(
        behind.map(async (wid) => (await t.checkpoints.scan([wid], { reverse: true, limit: 1 }))[0]?.value),
      );
      for (const last of lasts) {
        const at = last ? Date.parse(last.at) : Number.NaN;
        if (Number.isFinite(at)) oldestMs = Math.min(oldestMs, at);
      }
      return { records, unCheckpointed, secondsSinceCheckpoint: Math.max(0, (nowMs - oldestMs) / 1000) };
    },
    /** Ledger records waiting to be integrated, and the age of the oldest (its key's append time). */
    async ledgerWaiting(nowMs: number): Promise<{ records: number; oldestSeconds: number }> {
      let oldestMs = nowMs;
      const waiting = await t.ledgerWaiting.scan([]);
      for (const { key } of waiting) oldestMs = Math.min(oldestMs, Number(key[1]));
      return { records: waiting.length, oldestSeconds: Math.max(0, (nowMs - oldestMs) / 1000) };
    },
    /** Deliveries waiting in the outbox, and how long the oldest of them has waited since it was made. */
    async outbox(nowMs: number): Promise<{ depth: number; oldestSeconds: number }> {
      let oldestMs = nowMs;
      const waiting = await t.outbox.scan([]);
      const depth = waiting.length;
      const made = await Promise.all(
        waiting.map(async ({ key }) => {
          const [, wid, endpointId, deliveryId] = key as [number, string, string, string];
          return (await t.deliveries.get([wid, endpointId, deliveryId]))?.createdAt;
        }),
      );
      for (const createdAt of made) {
        const created = Date.parse(createdAt ?? '');
        if (Number.isFinite(created)) oldestMs = Math.min(oldestMs, created);
      }
      return { depth, oldestSeconds: Math.max(0, (nowMs - oldestMs) / 1000) };
    },
  };
}
