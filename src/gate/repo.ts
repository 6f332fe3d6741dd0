import { mandatesRepo, usageRepo } from '../mandates/repo.js';
import type { Store } from '../store/index.js';
import type { AgentRecord } from '../agents/records.js';
import type { ApprovalRecord } from '../approvals/records.js';
import type { ActionRecord, IdempotencyRecord } from './records.js';

/** The gate's reads and writes. Writes only inside store.write(). */
export function gateRepo(store: Store) {
  const t = store.tables;
  const mandates = mandatesRepo(store);
  return {
    action(wid: string, id: string): Promise<ActionRecord | undefined> {
      return t.actions.get([wid, id]);
    },
    async putAction(a: ActionRecord): Promise<void> {
      await t.actions.put([a.workspaceId, a.id], a);
    },
    idempotency(wid: string, aid: string, key: string): Promise<IdempotencyRecord | undefined> {
      return t.idempotency.get([wid, aid, key]);
    },
    async putIdempotency(wid: string, aid: string, key: string, value: IdempotencyRecord): Promise<void> {
      await t.idempotency.put([wid, aid, key], value);
    },
    rules: mandates.rules,
    ...usageRepo(store),
    agent(wid: string, aid: string): Promise<AgentRecord | undefined> {
      return t.agents.get([wid, aid]);
    },
    approval(wid: string, id: string): Promise<ApprovalRecord | undefined> {
      return t.approvals.get([wid, id]);
    },
    async putApproval(a: ApprovalRecord): Promise<void> {
      await t.approvals.put([a.workspaceId, a.id], a);
      await t.pendingApprovals.put([a.expiresAt, a.workspaceId, a.id], true);
    },
    /** Whether a merchant has checked the action's receipt online (it then stands). */
    receiptSeen(actionId: string): Promise<boolean> {
      return t.receiptsSeen.has(actionId);
    },
    /** Withdraws an action's receipt: online checks answer `revoked`. Only inside store.write(). */
    async withdrawReceipt(actionId: string, withdrawal: { at: string; reason: string }): Promise<void> {
      await t.receiptsWithdrawn.put(actionId, withdrawal);
    },
  };
}
