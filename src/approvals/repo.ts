import { mandatesRepo, usageRepo } from '../mandates/repo.js';
import type { KeyPart, Store } from '../store/index.js';
import type { AgentRecord } from '../agents/records.js';
import type { ApprovalRecord } from './records.js';
import type { ActionRecord } from '../gate/records.js';
import type { Role } from '../people/records.js';

/**
 * Approvals ([wid, id]), their expiry queue ([expiresAt, wid, id], pending ones only), and what
 * deciding them reads and writes of actions, agents, members and mandates. Writes only inside
 * store.write().
 */
export function approvalsRepo(store: Store) {
  const t = store.tables;
  const mandates = mandatesRepo(store);
  return {
    approval(wid: string, id: string): Promise<ApprovalRecord | undefined> {
      return t.approvals.get([wid, id]);
    },
    async approvals(wid: string): Promise<ApprovalRecord[]> {
      return (await t.approvals.scan([wid])).map((e) => e.value);
    },
    async putApproval(a: ApprovalRecord): Promise<void> {
      await t.approvals.put([a.workspaceId, a.id], a);
    },
    /** The first `limit` entries of the expiry queue, soonest first: [expiresAt, wid, id]. */
    async queue(limit: number): Promise<KeyPart[][]> {
      return (await t.pendingApprovals.scan([], { limit })).map((e) => e.key);
    },
    async unqueue(key: KeyPart[]): Promise<void> {
      await t.pendingApprovals.remove(key);
    },
    action(wid: string, id: string): Promise<ActionRecord | undefined> {
      return t.actions.get([wid, id]);
    },
    async putAction(a: ActionRecord): Promise<void> {
      await t.actions.put([a.workspaceId, a.id], a);
    },
    agent(wid: string, aid: string): Promise<AgentRecord | undefined> {
      return t.agents.get([wid, aid]);
    },
    async role(wid: string, userId: string): Promise<Role | undefined> {
      return (await t.members.get([wid, userId]))?.role;
    },
    rules: mandates.rules,
    ...usageRepo(store),
  };
}
