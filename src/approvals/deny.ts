import { checkDecider, pendingInWrite, viaOf, type ApprovalsContext } from './context.js';
import { endedBeforeDecision } from './expire.js';
import { decideFreezeInWrite } from './freeze-decision.js';
import type { ApprovalRecord } from './records.js';
import type { ApproveOutcome, Decider } from './service.js';

/**
 * A person denies, in one store.write(): a fleet freeze apart (./freeze-decision.ts); else closed
 * is 409 and past its time it expires now; the person must be one who may decide it (separation
 * of duties does not bar denying); then the `approval.denied` record, the approval closed, and
 * its action denied (`approval_denied`) through the gate's contract.
 */
export function createDeny(ctx: ApprovalsContext) {
  return async function deny(wid: string, aprId: string, who: Decider, note: string | null): Promise<ApproveOutcome> {
    return ctx.store.write(async (): Promise<ApproveOutcome> => {
      const now = ctx.clock.now();
      const freeze = await ctx.repo.approval(wid, aprId);
      if (freeze?.freeze) return decideFreezeInWrite(ctx, freeze, who, false, note, now);
      const { approval, action } = await pendingInWrite(ctx, wid, aprId);
      const ended = await endedBeforeDecision(ctx, approval, action, now);
      if (ended) return ended;
      checkDecider(approval, (await ctx.repo.agent(wid, action.agentId))?.actsFor ?? null, who);
      const denied: ApprovalRecord = {
        ...approval,
        status: 'denied',
        decidedBy: who.actor,
        reason: note ?? 'denied by a person',
      };
      const evidence = await ctx.ledger.record({
        workspaceId: wid,
        actor: who.actor,
        kind: 'approval.denied',
        subject: approval.id,
        data: { actionId: action.id, note, ...viaOf(who) },
      });
      await ctx.closeInWrite(denied);
      await ctx.actions.denyInWrite(action, {
        signals: ['approval_denied'],
        reason: `Denied by user:${who.userId}${note ? `: ${note}` : '.'}`,
        evidenceRecord: evidence.id,
      });
      return { kind: 'decided', approval: await ctx.view(denied, now) };
    });
  };
}
