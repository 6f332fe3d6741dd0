import { AppError } from '../errors/app-error.js';
import { isoAt } from '../lib/clock.js';
import { closed, viaOf, type ApprovalsContext } from './context.js';
import type { ApprovalRecord } from './records.js';
import type { ApproveOutcome, Decider } from './service.js';

/**
 * A fleet freeze waiting for a person (a token's freeze past the ceiling), decided inside
 * store.write(): past its time it expires (nothing is frozen); else owners and admins approve it
 * (the kill switch then freezes, in this write) or deny it. Each way a ledger record, then the
 * approval closes.
 */
export async function decideFreezeInWrite(
  ctx: ApprovalsContext,
  approval: ApprovalRecord,
  who: Decider,
  approve: boolean,
  note: string | null,
  now: number,
): Promise<ApproveOutcome> {
  if (approval.status !== 'pending') throw closed(approval);
  if (Date.parse(approval.expiresAt) <= now) {
    const expired: ApprovalRecord = {
      ...approval,
      status: 'expired',
      decidedBy: 'system',
      reason: 'nobody decided in time',
    };
    await ctx.ledger.record({
      workspaceId: approval.workspaceId,
      actor: 'system',
      kind: 'approval.expired',
      subject: approval.id,
      data: { freeze: true },
    });
    await ctx.closeInWrite(expired);
    return { kind: 'expired', approval: await ctx.view(expired, now) };
  }
  if (who.role !== 'owner' && who.role !== 'admin') {
    throw new AppError('forbidden', {
      message: 'Only owners and admins may decide a fleet freeze.',
      fix: 'Ask an owner or an admin to decide it.',
    });
  }
  const decided: ApprovalRecord = approve
    ? {
        ...approval,
        status: 'approved',
        approvals: [{ by: who.userId, at: isoAt(now), note }],
        decidedBy: who.actor,
        reason: null,
      }
    : { ...approval, status: 'denied', decidedBy: who.actor, reason: note ?? 'denied by a person' };
  await ctx.ledger.record({
    workspaceId: approval.workspaceId,
    actor: who.actor,
    kind: approve ? 'approval.approved' : 'approval.denied',
    subject: approval.id,
    data: { freeze: true, note, ...viaOf(who) },
  });
  if (approve) await ctx.killSwitch.applyApprovedFreezeInWrite(approval.workspaceId, approval.freeze!, who.actor);
  await ctx.closeInWrite(decided);
  return { kind: 'decided', approval: await ctx.view(decided, now) };
}
