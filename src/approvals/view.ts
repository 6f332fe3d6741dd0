import type { ApprovalRecord } from './records.js';
import type { ApprovalsRepo } from './repo.js';
import type { ApprovalView } from './service.js';

/** An approval's status as people see it: a waiting one past its time reads `expired`. */
export const statusAt = (a: ApprovalRecord, nowMs: number): ApprovalRecord['status'] =>
  a.status === 'pending' && Date.parse(a.expiresAt) <= nowMs ? 'expired' : a.status;

/** The approval as people see it at `nowMs`, with its action and the rule that asked, read now. */
export async function toApprovalView(repo: ApprovalsRepo, a: ApprovalRecord, nowMs: number): Promise<ApprovalView> {
  const [action, rules] = await Promise.all([
    repo.action(a.workspaceId, a.actionId),
    repo.rules(a.workspaceId, a.agentId),
  ]);
  return {
    id: a.id,
    actionId: a.actionId,
    agentId: a.agentId,
    status: statusAt(a, nowMs),
    approvers: a.approvers,
    approvals: a.approvals,
    requiredApprovals: a.requiredApprovals,
    separationOfDuties: a.separationOfDuties,
    createdAt: a.createdAt,
    expiresAt: a.expiresAt,
    decidedBy: a.decidedBy ?? null,
    reason: a.reason ?? null,
    action: action
      ? {
          type: action.type,
          summary: action.summary,
          payment: action.payment,
          target: action.target,
          reason: action.reason,
          ruleId: action.ruleId,
        }
      : null,
    rule: (action?.ruleId && rules.find((r) => r.id === action.ruleId)) || null,
    freeze: a.freeze ?? null,
  };
}
