import { mandatesRepo, usageRepo } from '../mandates/repo.js';
import type { Store } from '../store/index.js';
import type { AgentRecord } from '../agents/records.js';
import type { ApprovalRecord } from '../approvals/records.js';
import type { MandateRule } from '../mandates/records.js';
import type { UsageLookup, UsageQuery } from '../mandates/evaluate.js';
import type { PeriodCharge } from '../mandates/records.js';
import type { ActionRecord, IdempotencyRecord } from './records.js';

/**
 * The gate's reads and writes: actions ([wid, id]) and idempotency keys ([wid, aid, key]), which
 * this repo alone writes; the period usage through the mandates' usage repo; and the reads a
 * decision rests on (mandate rules, the agent, a waiting approval, whether a receipt was seen).
 * Writes only inside store.write().
 */
export interface GateRepo {
  action(wid: string, id: string): Promise<ActionRecord | undefined>;
  putAction(a: ActionRecord): Promise<void>;
  idempotency(wid: string, aid: string, key: string): Promise<IdempotencyRecord | undefined>;
  putIdempotency(wid: string, aid: string, key: string, value: IdempotencyRecord): Promise<void>;
  rules(wid: string, aid: string): Promise<MandateRule[]>;
  /** The usages an evaluation asks for (`usageQueries`), read ahead. */
  lookup(wid: string, aid: string, queries: readonly UsageQuery[]): Promise<UsageLookup>;
  /** Adds (or, negative, gives back) an amount on the day it was charged. */
  add(wid: string, aid: string, charge: PeriodCharge, delta: number): Promise<void>;
  agent(wid: string, aid: string): Promise<AgentRecord | undefined>;
  approval(wid: string, id: string): Promise<ApprovalRecord | undefined>;
  /** Whether a merchant has checked the action's receipt online (it then stands). */
  receiptSeen(actionId: string): Promise<boolean>;
  /** Withdraws an action's receipt: online checks answer `revoked`. */
  withdrawReceipt(actionId: string, withdrawal: { at: string; reason: string }): Promise<void>;
}

export function gateRepo(store: Store): GateRepo {
  const t = store.tables;
  const mandates = mandatesRepo(store);
  const usage = usageRepo(store);
  return {
    action(wid, id) {
      return t.actions.get([wid, id]);
    },
    async putAction(a) {
      await t.actions.put([a.workspaceId, a.id], a);
    },
    idempotency(wid, aid, key) {
      return t.idempotency.get([wid, aid, key]);
    },
    async putIdempotency(wid, aid, key, value) {
      await t.idempotency.put([wid, aid, key], value);
    },
    rules: mandates.rules,
    lookup: usage.lookup,
    add: usage.add,
    agent(wid, aid) {
      return t.agents.get([wid, aid]);
    },
    approval(wid, id) {
      return t.approvals.get([wid, id]);
    },
    receiptSeen(actionId) {
      return t.receiptsSeen.has(actionId);
    },
    async withdrawReceipt(actionId, withdrawal) {
      await t.receiptsWithdrawn.put(actionId, withdrawal);
    },
  };
}
