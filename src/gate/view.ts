import type { ActionRecord } from './records.js';

/** How long an idempotency key is kept, per agent: a retry within it is the same action again. */
export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;

/** An action as its agent (and the integrations that asked for it) sees it. */
export interface ActionView {
  id: string;
  object: 'action';
  agentId: string;
  type: string;
  summary: string;
  payment: ActionRecord['payment'];
  target: ActionRecord['target'];
  decision: ActionRecord['decision'];
  signals: string[];
  reason: string;
  status: ActionRecord['status'];
  approvalId: string | null;
  receipt: string | null;
  evidenceRecord: string | null;
  settlement: ActionRecord['settlement'];
  sessionId: string | null;
  metadata: Record<string, unknown> | null;
  createdAt: string;
  /** Present when the payment was read from a 402 payment challenge: what svc read and decided. */
  challenge?: NonNullable<ActionRecord['challenge']>;
  /** Only when asked for (`receipts: ["ap2"]`): the AP2 Payment Receipt, Success or Error. */
  ap2Receipt?: string | null;
  /** Only when asked for (`acp`): the signed ACP allowance; null until the payment is allowed. */
  acpAllowance?: string | null;
}

export function toActionView(a: ActionRecord): ActionView {
  return {
    id: a.id,
    object: 'action',
    agentId: a.agentId,
    type: a.type,
    summary: a.summary,
    payment: a.payment,
    target: a.target,
    decision: a.decision,
    signals: a.signals,
    reason: a.reason,
    status: a.status,
    approvalId: a.approvalId,
    receipt: a.receipt,
    evidenceRecord: a.evidenceRecord,
    settlement: a.settlement,
    sessionId: a.sessionId,
    metadata: a.metadata,
    createdAt: a.createdAt,
    ...(a.challenge ? { challenge: a.challenge } : {}),
    ...(a.protocols?.ap2 ? { ap2Receipt: a.ap2Receipt ?? null } : {}),
    ...(a.protocols?.acp ? { acpAllowance: a.acpAllowance ?? null } : {}),
  };
}
