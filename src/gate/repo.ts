import { usageRepo } from '../mandates/usage.js';
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
    ...usageRepo(store),
    putApproval(a: ApprovalRecord): void {
      t.approvals.put([a.workspaceId, a.id], a);
      t.pendingApprovals.put([a.expiresAt, a.workspaceId, a.id], true);
    },
  };
}
