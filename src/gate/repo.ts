import type { ActionRecord, ApprovalRecord, IdempotencyRecord, MandateRule, Store } from '../store/index.js';

/** The gate's reads and writes. Writes only inside store.write(). */
export function gateRepo(store: Store) {
  const t = store.tables;
  return {
    action(wid: string, id: string): ActionRecord | undefined {
      return t.actions.get([wid, id]);
    },
    putAction(a: ActionRecord): void {
      t.actions.put([a.workspaceId, a.id], a);
    },
    idempotency(wid: string, aid: string, key: string): IdempotencyRecord | undefined {
      return t.idempotency.get([wid, aid, key]);
    },
    putIdempotency(wid: string, aid: string, key: string, value: IdempotencyRecord): void {
      t.idempotency.put([wid, aid, key], value);
    },
    rules(wid: string, aid: string): MandateRule[] {
      return t.mandates.get([wid, aid])?.rules ?? [];
    },
    usage(wid: string, aid: string, ruleId: string, currency: string, periodStart: string): number {
      return t.periodUsage.get([wid, aid, ruleId, currency, periodStart]) ?? 0;
    },
    addUsage(wid: string, aid: string, c: { ruleId: string; currency: string; periodStart: string }, delta: number): void {
      const key = [wid, aid, c.ruleId, c.currency, c.periodStart];
      t.periodUsage.put(key, Math.max(0, (t.periodUsage.get(key) ?? 0) + delta));
    },
    putApproval(a: ApprovalRecord): void {
      t.approvals.put([a.workspaceId, a.id], a);
    },
  };
}
