import type { ActionRecord } from '../gate/records.js';
import { closed, type ApprovalsContext } from './context.js';
import { decideFreezeInWrite } from './freeze-decision.js';
import type { ApprovalRecord } from './records.js';
import type { ApproveOutcome } from './service.js';

/**
 * Ends an approval past its time, inside store.write(): an `approval.expired` record by the
 * system, the approval off the expiry queue, and its action denied (`approval_expired`) through
 * the gate's contract.
 */
export async function expireInWrite(
  ctx: ApprovalsContext,
  approval: ApprovalRecord,
  action: ActionRecord,
): Promise<ApprovalRecord> {
  const expired: ApprovalRecord = {
    ...approval,
    status: 'expired',
    decidedBy: 'system',
    reason: 'nobody decided in time',
  };
  const evidence = await ctx.ledger.record({
    workspaceId: approval.workspaceId,
    actor: 'system',
    kind: 'approval.expired',
    subject: approval.id,
    data: { actionId: action.id },
  });
  await ctx.closeInWrite(expired);
  await ctx.actions.denyInWrite(action, {
    signals: ['approval_expired'],
    reason: `Nobody decided approval ${approval.id} before ${approval.expiresAt}.`,
    evidenceRecord: evidence.id,
  });
  return expired;
}

/**
 * Ends every waiting approval past its time (the server runs this periodically), in one write: a
 * fleet freeze is denied by the system, an action's approval expires. Entries whose approval is
 * gone or no longer waiting just leave the queue. Answers how many it ended.
 */
export async function expireDue(ctx: ApprovalsContext): Promise<number> {
  const { repo, clock } = ctx;
  const due = async (now: number) => (await repo.queue(500)).filter((key) => Date.parse(String(key[0])) <= now);
  if ((await due(clock.now())).length === 0) return 0;
  return ctx.store.write(async () => {
    let n = 0;
    for (const key of await due(clock.now())) {
      const approval = await repo.approval(String(key[1]), String(key[2]));
      if (approval?.freeze && approval.status === 'pending') {
        await decideFreezeInWrite(
          ctx,
          approval,
          { userId: 'system', role: 'owner', actor: 'system' },
          false,
          null,
          clock.now(),
        );
        n += 1;
        continue;
      }
      const action = approval && (await repo.action(approval.workspaceId, approval.actionId));
      if (!approval || !action || approval.status !== 'pending') {
        await repo.unqueue(key);
        continue;
      }
      await expireInWrite(ctx, approval, action);
      n += 1;
    }
    return n;
  });
}

/**
 * Before a person's decision, inside its write: an approval no longer waiting is 409
 * approval_closed; one past its time expires now and that is the answer; null: still waiting.
 */
export async function endedBeforeDecision(
  ctx: ApprovalsContext,
  approval: ApprovalRecord,
  action: ActionRecord,
  now: number,
): Promise<ApproveOutcome | null> {
  if (approval.status !== 'pending') throw closed(approval);
  if (Date.parse(approval.expiresAt) > now) return null;
  return { kind: 'expired', approval: await ctx.view(await expireInWrite(ctx, approval, action), now) };
}
