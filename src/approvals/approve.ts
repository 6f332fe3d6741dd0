import { readStanding } from '../agents/standing.js';
import { AppError } from '../errors/app-error.js';
import { isoAt } from '../lib/clock.js';
import { evaluate, usageQueries, type ActionFacts } from '../mandates/evaluate.js';
import type { ActionRecord } from '../gate/records.js';
import { checkDecider, pendingInWrite, viaOf, type ApprovalsContext } from './context.js';
import { endedBeforeDecision } from './expire.js';
import { decideFreezeInWrite } from './freeze-decision.js';
import type { ApprovalRecord } from './records.js';
import type { ApproveOutcome, Decider } from './service.js';

type Given = ApprovalRecord['approvals'];

/**
 * A person approves (the approvals' rules are listed in ./service.ts), in one store.write(), as
 * an ordered list of steps:
 *  1. A fleet freeze is decided apart (./freeze-decision.ts).
 *  2. `endedBeforeDecision` (./expire.ts): closed is 409; past its time, it expires now.
 *  3. `checkDecider` (./context.ts): named approvers, or owners, admins and the member the agent acts for.
 *  4. `notBound`: separation of duties (403), against whom the agent acts for now and did when it asked.
 *  5. `notTwice`: the same person approves once (409 second_person_required).
 *  6. `stillValid`: earlier approvals count only while their authors could still give them.
 *  7. `agentRunning`: a stopped agent's action cannot be approved (403 agent_stopped).
 *  8. The `approval.approved` record; short of the count, the approval waits for a second person.
 *  9. `freshCheck`: the mandate and usage as they are now allow it (the gate's contract then
 *     allows the action, with its receipt) or deny it (limits used meanwhile).
 */
export function createApprove(ctx: ApprovalsContext) {
  return async function approve(
    wid: string,
    aprId: string,
    who: Decider,
    note: string | null,
  ): Promise<ApproveOutcome> {
    return ctx.store.write(async (): Promise<ApproveOutcome> => {
      const now = ctx.clock.now();
      const freeze = await ctx.repo.approval(wid, aprId);
      if (freeze?.freeze) return decideFreezeInWrite(ctx, freeze, who, true, note, now);
      const { approval, action } = await pendingInWrite(ctx, wid, aprId);
      const ended = await endedBeforeDecision(ctx, approval, action, now);
      if (ended) return ended;
      const actsFor = (await ctx.repo.agent(wid, action.agentId))?.actsFor ?? null;
      checkDecider(approval, actsFor, who);
      // Against whom the agent acts for now and whom it acted for when it asked: changing
      // `actsFor` meanwhile cannot make someone their own approver.
      const bound = (uid: string) => approval.separationOfDuties && (actsFor === uid || approval.requestedFor === uid);
      notBound(bound, who);
      notTwice(approval, who);
      const earlier = await stillValid(ctx, wid, approval, actsFor, bound);
      await agentRunning(ctx, wid, action.agentId);
      const approvals: Given = [...earlier, { by: who.userId, at: isoAt(now), note }];
      await ctx.ledger.record({
        workspaceId: wid,
        actor: who.actor,
        kind: 'approval.approved',
        subject: approval.id,
        data: {
          actionId: action.id,
          note,
          count: approvals.length,
          required: approval.requiredApprovals,
          ...viaOf(who),
        },
      });
      if (approvals.length < approval.requiredApprovals) {
        const waiting = { ...approval, approvals };
        await ctx.repo.putApproval(waiting);
        return { kind: 'waiting_for_second', approval: await ctx.view(waiting, now) };
      }
      const decided = await freshCheck(ctx, approval, action, approvals, who, now);
      await ctx.closeInWrite(decided);
      return { kind: 'decided', approval: await ctx.view(decided, now) };
    });
  };
}

/** Separation of duties: the person the agent acts for may not approve its action (denying stays open). */
function notBound(bound: (uid: string) => boolean, who: Decider): void {
  if (bound(who.userId)) {
    throw new AppError('separation_of_duties', {
      message:
        'You are the person this agent acts for, and its rule asks for separation of duties: someone else must approve.',
    });
  }
}

/** Each person approves once; a two-person rule needs a second, different person. */
function notTwice(approval: ApprovalRecord, who: Decider): void {
  if (approval.approvals.some((a) => a.by === who.userId)) {
    throw new AppError('second_person_required', {
      message: 'You already approved this; a second, different person must approve too.',
    });
  }
}

/**
 * Earlier approvals count only while their authors could still give them now (not removed, not
 * demoted, not bound by separation of duties).
 */
async function stillValid(
  ctx: ApprovalsContext,
  wid: string,
  approval: ApprovalRecord,
  actsFor: string | null,
  bound: (uid: string) => boolean,
): Promise<Given> {
  const roles = await Promise.all(approval.approvals.map((a) => ctx.repo.role(wid, a.by)));
  return approval.approvals.filter((a, i) => {
    const role = roles[i];
    if (!role || bound(a.by)) return false;
    try {
      checkDecider(approval, actsFor, { userId: a.by, role, actor: `user:${a.by}` });
      return role === 'owner' || role === 'admin' || role === 'member';
    } catch {
      return false;
    }
  });
}

/** A stopped agent's action cannot be approved until a permitted person restarts it; it can be denied. */
async function agentRunning(ctx: ApprovalsContext, wid: string, agentId: string): Promise<void> {
  const standing = await readStanding(ctx.store, wid, agentId);
  if (standing.stopped) {
    throw new AppError('agent_stopped', {
      message:
        'The agent is stopped: its action cannot be approved until a permitted person restarts it. It can be denied.',
      fix: 'Restart the agent first, or deny the approval.',
      details: { hold: standing.hold, stopped: standing.stoppedBy, agentId },
    });
  }
}

/**
 * Every approval is in: a fresh check against the mandate and usage as they are now. Allowed, the
 * action is allowed through the gate's contract (charge, receipt with `hum: true`, its record);
 * limits used meanwhile deny it, naming the signal, and the approval ends `denied` with that reason.
 */
async function freshCheck(
  ctx: ApprovalsContext,
  approval: ApprovalRecord,
  action: ActionRecord,
  approvals: Given,
  who: Decider,
  now: number,
): Promise<ApprovalRecord> {
  const wid = approval.workspaceId;
  const rules = await ctx.repo.rules(wid, action.agentId);
  const facts: ActionFacts = {
    type: action.type,
    amount: action.payment?.amount ?? null,
    currency: action.payment?.currency ?? null,
    merchant: action.payment?.merchant ?? null,
    domain: action.target?.domain ?? null,
    ap2Mandate: action.ap2Mandate ?? null,
  };
  const usage = await ctx.repo.lookup(wid, action.agentId, usageQueries(rules, facts, now));
  const verdict = evaluate(rules, facts, usage, now, { approved: true });
  if (verdict.decision === 'deny') {
    const evidence = await ctx.ledger.record({
      workspaceId: wid,
      actor: 'system',
      kind: 'action.denied',
      subject: action.id,
      data: { approvalId: approval.id, signals: verdict.signals, reason: verdict.reason },
    });
    await ctx.actions.denyInWrite(action, {
      signals: [...verdict.signals],
      reason: verdict.reason,
      evidenceRecord: evidence.id,
    });
    return { ...approval, approvals, status: 'denied', decidedBy: 'system', reason: verdict.reason };
  }
  await ctx.actions.allowInWrite(action, {
    approvalId: approval.id,
    ruleId: verdict.rule.id,
    charge: verdict.decision === 'allow' ? verdict.charge : null,
    reason: `Approved by ${approvals.map((a) => `user:${a.by}`).join(' and ')}.`,
    actor: who.actor,
    nowMs: now,
  });
  return { ...approval, approvals, status: 'approved', decidedBy: who.actor, reason: null };
}
