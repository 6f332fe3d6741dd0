/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts; ids: src/lib/ids.ts). Types only: the store imports
 * them, so nothing here runs (test/architecture/layers.test.ts holds it to that).
 */

import type { PeriodCharge } from '../mandates/records.js';

export type ActionStatus = 'allowed' | 'denied' | 'pending_approval' | 'settled';

export type Decision = 'allow' | 'deny' | 'review';

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
  /** The imported AP2 open mandate a presented closed mandate chained to (docs/ap2.md); absent: none. */
  ap2Mandate?: string | null;
  createdAt: string;
  /** The protocol receipts the request asked for (absent on actions from before they existed). */
  protocols?: { ap2: boolean; acp: { checkoutSessionId: string; merchantId: string } | null } | null;
  /** The AP2 Payment Receipt (Success for an allow, Error for a deny), when asked for. */
  ap2Receipt?: string | null;
  /** The signed ACP allowance of an allowed payment, when asked for. */
  acpAllowance?: string | null;
  /** The 402 payment challenge the payment was read from (absent or null: none). */
  challenge?: ActionChallenge | null;
}

/** What the gate read from a 402 payment challenge (docs/payment-challenges.md). */
export interface ActionChallenge {
  scheme: 'x402' | 'mpp';
  /** base64url SHA-256 of the header value as received; the receipt's `challengeHash`. */
  hash: string;
  payee: string;
  asset: string;
  network: string;
  /** The amount in the asset's base units, as the challenge states it. */
  assetAmount: string;
}

export interface IdempotencyRecord {
  actionId: string;
  /** SHA-256 of the canonical request, to tell a retry from a different request. */
  fingerprint: string;
  expiresAt: string;
}
