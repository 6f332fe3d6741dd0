/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts; ids: src/lib/ids.ts). Types only: the store imports
 * them, so nothing here runs (test/architecture/layers.test.ts holds it to that).
 */

export type ActionStatus = 'allowed' | 'denied' | 'pending_approval' | 'settled';

export type Decision = 'allow' | 'deny' | 'review';

/** What an allowed action adds to its rule's usage (mandates/usage.ts), so a settlement can release or replace it. */
export interface PeriodCharge {
  /** The rule's cover, hashed: usage follows what a rule covers, not its id. */
  usageKey: string;
  currency: string;
  /** The UTC day the amount counts on. */
  day: string;
  amount: number;
}

export interface ActionRecord {
  id: string;
  workspaceId: string;
  agentId: string;
  type: string;
  summary: string;
  payment: { amount: number; currency: string; merchant?: string } | null;
  target: { domain?: string } | null;
  decision: Decision;
  signals: string[];
  reason: string;
  status: ActionStatus;
  ruleId: string | null;
  approvalId: string | null;
  receipt: string | null;
  evidenceRecord: string | null;
  settlement: { status: 'completed' | 'failed' | 'cancelled'; amount: number | null; at: string } | null;
  charge: PeriodCharge | null;
  sessionId: string | null;
  idempotencyKey: string | null;
  metadata: Record<string, unknown> | null;
  createdAt: string;
}

export interface IdempotencyRecord {
  actionId: string;
  /** SHA-256 of the canonical request, to tell a retry from a different request. */
  fingerprint: string;
  expiresAt: string;
}
