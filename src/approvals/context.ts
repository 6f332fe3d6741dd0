import { AppError } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { Ledger } from '../ledger/service.js';
import type { PendingActions } from '../gate/pending.js';
import type { ActionRecord } from '../gate/records.js';
import type { ApprovedFreezes } from './contracts.js';
import type { Store } from '../store/index.js';
import type { ApprovalRecord } from './records.js';
import { approvalsRepo, type ApprovalsRepo } from './repo.js';
import type { ApprovalView, Decider } from './service.js';
import { toApprovalView } from './view.js';

/** What every approval operation (./approve.ts, ./deny.ts, ./expire.ts, …) is given. */
export interface ApprovalsContext {
  store: Store;
  clock: Clock;
  ledger: Ledger;
  repo: ApprovalsRepo;
  /** The gate's contract: how a waiting action ends. */
  actions: PendingActions;
  /** Applies a fleet freeze a person approved, inside the approval's write. */
  killSwitch: ApprovedFreezes;
  /** The approval as people see it at `nowMs`. */
  view(a: ApprovalRecord, nowMs: number): Promise<ApprovalView>;
  /** Writes an approval that is no longer waiting, and takes it off the expiry queue. Inside store.write(). */
  closeInWrite(a: ApprovalRecord): Promise<void>;
}

export function createContext(deps: {
  store: Store;
  clock: Clock;
  ledger: Ledger;
  actions: PendingActions;
  killSwitch: ApprovedFreezes;
}): ApprovalsContext {
  const repo = approvalsRepo(deps.store);
  return {
    ...deps,
    repo,
    view: (a, nowMs) => toApprovalView(repo, a, nowMs),
    async closeInWrite(a) {
      await repo.putApproval(a.status === 'pending' ? a : { ...a, decidedAt: a.decidedAt ?? isoAt(deps.clock.now()) });
      if (a.status !== 'pending') await repo.unqueue([a.expiresAt, a.workspaceId, a.id]);
    },
  };
}

/** 409 approval_closed: the approval was decided or expired already. */
export const closed = (approval: ApprovalRecord) =>
  new AppError('approval_closed', {
    message: `Approval ${approval.id} is ${approval.status}; it is no longer waiting.`,
  });

/** A decision made from chat names its channel and chat user in its ledger record. */
export const viaOf = (who: Decider) => (who.via ? { via: who.via } : {});

/** The approval and its action, read in the decision's write; 404 when either is missing. */
export async function pendingInWrite(
  ctx: ApprovalsContext,
  wid: string,
  aprId: string,
): Promise<{ approval: ApprovalRecord; action: ActionRecord }> {
  const approval = await ctx.repo.approval(wid, aprId);
  const action = approval && (await ctx.repo.action(wid, approval.actionId));
  if (!approval || !action) throw new AppError('not_found', { message: 'No such approval in this workspace.' });
  return { approval, action };
}

/**
 * May this person decide this approval at all (before duties and counts)? Named approvers only,
 * when the rule names them; else owners, admins, and the member the agent acts for.
 */
export function checkDecider(approval: ApprovalRecord, actsFor: string | null, who: Decider): void {
  if (approval.approvers) {
    if (!approval.approvers.includes(who.userId)) {
      throw new AppError('forbidden', {
        message: `Only the approvers the rule names may decide this approval: ${approval.approvers.join(', ')}.`,
        fix: 'Ask one of the named approvers to decide it.',
      });
    }
    return;
  }
  if (who.role === 'owner' || who.role === 'admin') return;
  if (who.role === 'member' && actsFor === who.userId) return;
  throw new AppError('forbidden', {
    message: 'Only owners, admins, or the member the agent acts for may decide this approval.',
    fix: 'Ask an owner or an admin to decide it.',
  });
}
