import { mandatesRepo, usageRepo } from '../mandates/repo.js';
import type { KeyPart, Store } from '../store/index.js';
import type { AgentRecord } from '../agents/records.js';
import type { ApprovalRecord } from './records.js';
import type { ActionRecord } from '../gate/records.js';
import type { Role } from '../people/records.js';
import type { MandateRule } from '../mandates/records.js';
import type { UsageLookup, UsageQuery } from '../mandates/evaluate.js';

/**
 * Approvals ([wid, id]) and their expiry queue ([expiresAt, wid, id], pending ones only): this
 * repo is the only writer of both. It also reads what deciding them rests on (actions, agents,
 * members, mandates and period usage); an action's outcome is written by the gate's contract
 * (gate/pending.ts). Writes only inside store.write().
 */
export interface ApprovalsRepo {
  approval(wid: string, id: string): Promise<ApprovalRecord | undefined>;
  approvals(wid: string): Promise<ApprovalRecord[]>;
  /** A new waiting approval and its place on the expiry queue, together. */
  open(a: ApprovalRecord): Promise<void>;
  putApproval(a: ApprovalRecord): Promise<void>;
  /** The first `limit` entries of the expiry queue, soonest first: [expiresAt, wid, id]. */
  queue(limit: number): Promise<KeyPart[][]>;
  unqueue(key: KeyPart[]): Promise<void>;
  action(wid: string, id: string): Promise<ActionRecord | undefined>;
  agent(wid: string, aid: string): Promise<AgentRecord | undefined>;
  role(wid: string, userId: string): Promise<Role | undefined>;
  rules(wid: string, aid: string): Promise<MandateRule[]>;
  /** The usages an evaluation asks for (`usageQueries`), read ahead. */
  lookup(wid: string, aid: string, queries: readonly UsageQuery[]): Promise<UsageLookup>;
}

export function approvalsRepo(store: Store): ApprovalsRepo {
  const t = store.tables;
  const mandates = mandatesRepo(store);
  const usage = usageRepo(store);
  return {
    approval(wid: string, id: string): Promise<ApprovalRecord | undefined> {
      return t.approvals.get([wid, id]);
    },
    async approvals(wid: string): Promise<ApprovalRecord[]> {
      return (await t.approvals.scan([wid])).map((e) => e.value);
    },
    /** A new waiting approval and its place on the expiry queue, together. */
    async open(a: ApprovalRecord): Promise<void> {
      await t.approvals.put([a.workspaceId, a.id], a);
      await t.pendingApprovals.put([a.expiresAt, a.workspaceId, a.id], true);
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
    agent(wid: string, aid: string): Promise<AgentRecord | undefined> {
      return t.agents.get([wid, aid]);
    },
    async role(wid: string, userId: string): Promise<Role | undefined> {
      return (await t.members.get([wid, userId]))?.role;
    },
    rules: mandates.rules,
    lookup: usage.lookup,
  };
}
