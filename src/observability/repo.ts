import type { Store } from '../store/index.js';

/**
 * The store reads behind the gauges of GET /metrics, made at scrape time across every workspace.
 * Each is one pass over an index or a small table (pending approvals, the outbox, the ledger
 * heads, the stop-all states), except the agents' holds, which walks the agents.
 */
export function observabilityRepo(store: Store) {
  const t = store.tables;
  return {
    approvalsWaiting(): number {
      return t.pendingApprovals.scan([]).length;
    },
    agentsStopped(): number {
      let n = 0;
      for (const { value } of t.agents.scan([])) if (value.removedAt === null && (value.holds?.length ?? 0) > 0) n += 1;
      return n;
    },
    workspacesStoppedAll(): number {
      return t.stopAll.scan([]).length;
    },
    /** Records in all ledgers, those not yet under a checkpoint, and the oldest wait since a checkpoint of those. */
    ledger(nowMs: number): { records: number; unCheckpointed: number; secondsSinceCheckpoint: number } {
      let records = 0;
      let unCheckpointed = 0;
      let oldestMs = nowMs;
      for (const { key, value } of t.ledgerHeads.scan([])) {
        records += value.size;
        if (value.size <= value.checkpointSize) continue;
        unCheckpointed += value.size - value.checkpointSize;
        const last = t.checkpoints.scan([key[0]!], { reverse: true, limit: 1 })[0]?.value;
        const at = last ? Date.parse(last.at) : Number.NaN;
        if (Number.isFinite(at)) oldestMs = Math.min(oldestMs, at);
      }
      return { records, unCheckpointed, secondsSinceCheckpoint: Math.max(0, (nowMs - oldestMs) / 1000) };
    },
    /** Deliveries waiting in the outbox, and how long the oldest of them has waited since it was made. */
    outbox(nowMs: number): { depth: number; oldestSeconds: number } {
      let depth = 0;
      let oldestMs = nowMs;
      for (const { key } of t.outbox.scan([])) {
        depth += 1;
        const [, wid, endpointId, deliveryId] = key as [number, string, string, string];
        const created = Date.parse(t.deliveries.get([wid, endpointId, deliveryId])?.createdAt ?? '');
        if (Number.isFinite(created)) oldestMs = Math.min(oldestMs, created);
      }
      return { depth, oldestSeconds: Math.max(0, (nowMs - oldestMs) / 1000) };
    },
  };
}
