import { AppError } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { Ledger } from '../ledger/service.js';
import { readStanding } from '../agents/standing.js';
import { evaluate, usageQueries, type ActionFacts } from '../mandates/evaluate.js';
import type { KillSwitch } from '../killswitch/service.js';
import type { Receipts } from '../receipts/service.js';
import type { Store } from '../store/index.js';
import type { ApprovalRecord } from './records.js';
import type { ActionRecord } from '../gate/records.js';
import type { MandateRule } from '../mandates/records.js';
import type { Role } from '../people/records.js';
import { approvalsRepo } from './repo.js';

/**
 * Human approvals (docs/gate.md#approvals-and-the-kill-switch). Decided only by signed-in people: no route a key
 * or token reaches calls this module.
 * Rules:
 * - Who may decide: owners and admins; members only for agents that act for them; when the rule
 *   names approvers, only those people (whatever their role).
 * - Separation of duties (the rule says so): the person the agent acts for may not approve its
 *   action (403 separation_of_duties). Denying stays open to them.
 * - Two-person rules (`count: 2`): each person approves once; the first approval is recorded and
 *   answered 409 second_person_required until a second, different person approves.
 * - An action of a stopped agent cannot be approved (403 agent_stopped); it can be denied.
 * - When the last approval arrives the action is checked afresh against the mandate and period
 *   usage as they are then: allowed, it gets its receipt with `hum: true`; limits used meanwhile
 *   turn it into a deny naming the signal (the approval then ends `denied` with that reason).
 * - An approval expires `ttl` after it was asked; its action is then denied (`approval_expired`).
 *   Deciding it afterwards is 409 approval_closed; so is deciding one already decided.
 * - Every approval, denial and expiry is a ledger record naming the person (or the system); a
 *   decision made from chat also names, in that same record, the channel and the chat user.
 */
export interface Decider {
  userId: string;
  role: Role;
  actor: string;
  /** A decision made from chat (a mapped chat user's click), not in the console: recorded with it. */
  via?: { channel: 'chat-relay' | 'slack'; platform: string; chatUserId: string };
}

const viaOf = (who: Decider) => (who.via ? { via: who.via } : {});

export interface ApprovalView {
  id: string;
  actionId: string;
  agentId: string;
  status: ApprovalRecord['status'];
  approvers: string[] | null;
  approvals: ApprovalRecord['approvals'];
  requiredApprovals: number;
  separationOfDuties: boolean;
  createdAt: string;
  expiresAt: string;
  decidedBy: string | null;
  reason: string | null;
  action: {
    type: string;
    summary: string;
    payment: ActionRecord['payment'];
    target: ActionRecord['target'];
    /** Why the gate asked a person: the rule and its threshold, as the action's `reason` says. */
    reason: string;
    /** The mandate rule that asked for the approval. */
    ruleId: string | null;
  } | null;
  /**
   * That rule as the agent's mandate holds it now: null when the mandate no longer has it (changed
   * since), or for a bulk freeze.
   */
  rule: MandateRule | null;
  /** For a bulk freeze waiting for a person: what would be frozen, and which token asked. */
  freeze: ApprovalRecord['freeze'] | null;
}

export type ApproveOutcome =
  | { kind: 'decided'; approval: ApprovalView }
  | { kind: 'waiting_for_second'; approval: ApprovalView }
  | { kind: 'expired'; approval: ApprovalView };

export function createApprovals(deps: {
  store: Store;
  clock: Clock;
  ledger: Ledger;
  receipts: Receipts;
  killSwitch: KillSwitch;
}) {
  const { store, clock, ledger, receipts, killSwitch } = deps;
  const repo = approvalsRepo(store);

  /** An approval's status as people see it: a waiting one past its time reads `expired`. */
  const statusAt = (a: ApprovalRecord, nowMs: number): ApprovalRecord['status'] =>
    a.status === 'pending' && Date.parse(a.expiresAt) <= nowMs ? 'expired' : a.status;

  const view = async (a: ApprovalRecord, nowMs: number): Promise<ApprovalView> => {
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
  };

  const pendingInWrite = async (
    wid: string,
    aprId: string,
  ): Promise<{ approval: ApprovalRecord; action: ActionRecord }> => {
    const approval = await repo.approval(wid, aprId);
    const action = approval && (await repo.action(wid, approval.actionId));
    if (!approval || !action) throw new AppError('not_found', { message: 'No such approval in this workspace.' });
    return { approval, action };
  };

  /** Writes an approval that is no longer waiting, and takes it off the expiry queue. */
  const settleApproval = async (a: ApprovalRecord): Promise<void> => {
    await repo.putApproval(a.status === 'pending' ? a : { ...a, decidedAt: a.decidedAt ?? isoAt(clock.now()) });
    if (a.status !== 'pending') await repo.unqueue([a.expiresAt, a.workspaceId, a.id]);
  };

  const closed = (approval: ApprovalRecord) =>
    new AppError('approval_closed', {
      message: `Approval ${approval.id} is ${approval.status}; it is no longer waiting.`,
    });

  /** Ends an approval past its time: its action is denied. Inside store.write(). */
  const expireInWrite = async (approval: ApprovalRecord, action: ActionRecord): Promise<ApprovalRecord> => {
    const expired: ApprovalRecord = {
      ...approval,
      status: 'expired',
      decidedBy: 'system',
      reason: 'nobody decided in time',
    };
    const evidence = await ledger.record({
      workspaceId: approval.workspaceId,
      actor: 'system',
      kind: 'approval.expired',
      subject: approval.id,
      data: { actionId: action.id },
    });
    await settleApproval(expired);
    await repo.putAction({
      ...action,
      decision: 'deny',
      status: 'denied',
      signals: ['approval_expired'],
      reason: `Nobody decided approval ${approval.id} before ${approval.expiresAt}.`,
      evidenceRecord: evidence.id,
    });
    return expired;
  };

  /** A bulk freeze waiting for a person: owners and admins decide it. Inside store.write(). */
  const decideFreezeInWrite = async (
    approval: ApprovalRecord,
    who: Decider,
    approve: boolean,
    note: string | null,
    now: number,
  ): Promise<ApproveOutcome> => {
    if (approval.status !== 'pending') throw closed(approval);
    if (Date.parse(approval.expiresAt) <= now) {
      const expired: ApprovalRecord = {
        ...approval,
        status: 'expired',
        decidedBy: 'system',
        reason: 'nobody decided in time',
      };
      await ledger.record({
        workspaceId: approval.workspaceId,
        actor: 'system',
        kind: 'approval.expired',
        subject: approval.id,
        data: { freeze: true },
      });
      await settleApproval(expired);
      return { kind: 'expired', approval: await view(expired, now) };
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
    await ledger.record({
      workspaceId: approval.workspaceId,
      actor: who.actor,
      kind: approve ? 'approval.approved' : 'approval.denied',
      subject: approval.id,
      data: { freeze: true, note, ...viaOf(who) },
    });
    if (approve) await killSwitch.applyApprovedFreezeInWrite(approval.workspaceId, approval.freeze!, who.actor);
    await settleApproval(decided);
    return { kind: 'decided', approval: await view(decided, now) };
  };

  /** May this person decide this approval at all (before duties and counts)? */
  const checkDecider = (approval: ApprovalRecord, actsFor: string | null, who: Decider): void => {
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
  };

  return {
    /** Ends every waiting approval past its time (the server runs this periodically). */
    async expireDue(): Promise<number> {
      const due = async (now: number) => (await repo.queue(500)).filter((key) => Date.parse(String(key[0])) <= now);
      if ((await due(clock.now())).length === 0) return 0;
      return store.write(async () => {
        let n = 0;
        for (const key of await due(clock.now())) {
          const approval = await repo.approval(String(key[1]), String(key[2]));
          if (approval?.freeze && approval.status === 'pending') {
            await decideFreezeInWrite(
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
          await expireInWrite(approval, action);
          n += 1;
        }
        return n;
      });
    },

    /**
     * Suggested rules (approvals:read): where people approved the same kind of payment
     * for an agent at least `minApprovals` times, the rule that would have allowed them outright.
     * Only a suggestion: a person decides whether to add it to the mandate.
     */
    async suggestions(
      wid: string,
      minApprovals = 3,
    ): Promise<
      Array<{
        agentId: string;
        approvedCount: number;
        rule: {
          actions: string[];
          merchants?: string[];
          domains?: string[];
          currencies?: string[];
          maxAmount?: number;
        };
      }>
    > {
      const groups = new Map<
        string,
        {
          agentId: string;
          type: string;
          merchant: string | null;
          domain: string | null;
          currency: string | null;
          count: number;
          max: number;
        }
      >();
      const approved = (await repo.approvals(wid)).filter((a) => a.status === 'approved' && !a.freeze);
      const actions = await Promise.all(approved.map((a) => repo.action(wid, a.actionId)));
      for (const [i, a] of approved.entries()) {
        const action = actions[i];
        if (!action) continue;
        const merchant = action.payment?.merchant ?? null;
        const domain = action.target?.domain ?? null;
        const currency = action.payment?.currency ?? null;
        const key = JSON.stringify([a.agentId, action.type, merchant, domain, currency]);
        const g = groups.get(key) ?? {
          agentId: a.agentId,
          type: action.type,
          merchant,
          domain,
          currency,
          count: 0,
          max: 0,
        };
        g.count += 1;
        g.max = Math.max(g.max, action.payment?.amount ?? 0);
        groups.set(key, g);
      }
      return [...groups.values()]
        .filter((g) => g.count >= minApprovals)
        .sort((x, y) => y.count - x.count)
        .map((g) => ({
          agentId: g.agentId,
          approvedCount: g.count,
          rule: {
            actions: [g.type],
            ...(g.merchant ? { merchants: [g.merchant] } : {}),
            ...(g.domain ? { domains: [g.domain] } : {}),
            ...(g.currency ? { currencies: [g.currency], maxAmount: g.max } : {}),
          },
        }));
    },

    /**
     * Oldest first (by when they were asked, then id): the one waiting longest is decided first.
     * `after` is the id of the last approval of the previous page. `onlyFor`: a member sees the
     * approvals of agents that act for them (or name them).
     */
    async list(
      wid: string,
      options: { status?: ApprovalRecord['status']; after?: string; limit: number; onlyFor?: string },
    ): Promise<{ data: ApprovalView[]; next: string | null }> {
      const now = clock.now();
      const [all, cursor] = await Promise.all([
        repo.approvals(wid),
        options.after ? repo.approval(wid, options.after) : undefined,
      ]);
      // Whom each agent acts for, read once per agent (a member sees the approvals of their agents).
      const onlyFor = options.onlyFor;
      const actsFor = new Map<string, string | null>();
      if (onlyFor) {
        const agentIds = [...new Set(all.map((a) => a.agentId))];
        const agents = await Promise.all(agentIds.map((aid) => repo.agent(wid, aid)));
        agentIds.forEach((aid, i) => actsFor.set(aid, agents[i]?.actsFor ?? null));
      }
      const matching = all
        .filter((a) => !onlyFor || a.approvers?.includes(onlyFor) || actsFor.get(a.agentId) === onlyFor)
        .filter((a) => !options.status || statusAt(a, now) === options.status)
        .sort((x, y) => (x.createdAt === y.createdAt ? (x.id < y.id ? -1 : 1) : x.createdAt < y.createdAt ? -1 : 1));
      const rest = cursor
        ? matching.filter(
            (v) => v.createdAt > cursor.createdAt || (v.createdAt === cursor.createdAt && v.id > cursor.id),
          )
        : matching;
      const page = rest.slice(0, options.limit);
      return {
        data: await Promise.all(page.map((a) => view(a, now))),
        next: rest.length > options.limit ? page[page.length - 1]!.id : null,
      };
    },

    async approve(wid: string, aprId: string, who: Decider, note: string | null): Promise<ApproveOutcome> {
      return store.write(async (): Promise<ApproveOutcome> => {
        const now = clock.now();
        const freeze = await repo.approval(wid, aprId);
        if (freeze?.freeze) return decideFreezeInWrite(freeze, who, true, note, now);
        const { approval, action } = await pendingInWrite(wid, aprId);
        if (approval.status !== 'pending') throw closed(approval);
        if (Date.parse(approval.expiresAt) <= now)
          return { kind: 'expired', approval: await view(await expireInWrite(approval, action), now) };
        const agent = await repo.agent(wid, action.agentId);
        checkDecider(approval, agent?.actsFor ?? null, who);
        // Against whom the agent acts for now and whom it acted for when it asked: changing
        // `actsFor` meanwhile cannot make someone their own approver.
        const bound = (uid: string) =>
          approval.separationOfDuties && (agent?.actsFor === uid || approval.requestedFor === uid);
        if (bound(who.userId)) {
          throw new AppError('separation_of_duties', {
            message:
              'You are the person this agent acts for, and its rule asks for separation of duties: someone else must approve.',
          });
        }
        if (approval.approvals.some((a) => a.by === who.userId)) {
          throw new AppError('second_person_required', {
            message: 'You already approved this; a second, different person must approve too.',
          });
        }
        // Earlier approvals count only while their authors could still give them now (not
        // removed, not demoted, not bound by separation of duties).
        const roles = await Promise.all(approval.approvals.map((a) => repo.role(wid, a.by)));
        const stillValid = approval.approvals.filter((a, i) => {
          const role = roles[i];
          if (!role || bound(a.by)) return false;
          try {
            checkDecider(approval, agent?.actsFor ?? null, { userId: a.by, role, actor: `user:${a.by}` });
            return role === 'owner' || role === 'admin' || role === 'member';
          } catch {
            return false;
          }
        });
        const standing = await readStanding(store, wid, action.agentId);
        if (standing.stopped) {
          throw new AppError('agent_stopped', {
            message:
              'The agent is stopped: its action cannot be approved until a permitted person restarts it. It can be denied.',
            fix: 'Restart the agent first, or deny the approval.',
            details: { hold: standing.hold, stopped: standing.stoppedBy, agentId: action.agentId },
          });
        }
        const at = isoAt(now);
        const approvals = [...stillValid, { by: who.userId, at, note }];
        await ledger.record({
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
          await repo.putApproval(waiting);
          return { kind: 'waiting_for_second', approval: await view(waiting, now) };
        }
        // Every approval is in: a fresh check against the mandate and usage as they are now.
        const rules = await repo.rules(wid, action.agentId);
        const facts: ActionFacts = {
          type: action.type,
          amount: action.payment?.amount ?? null,
          currency: action.payment?.currency ?? null,
          merchant: action.payment?.merchant ?? null,
          domain: action.target?.domain ?? null,
        };
        const usage = await repo.lookup(wid, action.agentId, usageQueries(rules, facts, now));
        const verdict = evaluate(rules, facts, usage, now, { approved: true });
        let decided: ApprovalRecord;
        if (verdict.decision === 'deny') {
          decided = { ...approval, approvals, status: 'denied', decidedBy: 'system', reason: verdict.reason };
          const evidence = await ledger.record({
            workspaceId: wid,
            actor: 'system',
            kind: 'action.denied',
            subject: action.id,
            data: { approvalId: approval.id, signals: verdict.signals, reason: verdict.reason },
          });
          await repo.putAction({
            ...action,
            decision: 'deny',
            status: 'denied',
            signals: [...verdict.signals],
            reason: verdict.reason,
            evidenceRecord: evidence.id,
          });
        } else {
          decided = { ...approval, approvals, status: 'approved', decidedBy: who.actor, reason: null };
          const allowed: ActionRecord = {
            ...action,
            decision: 'allow',
            status: 'allowed',
            signals: [],
            ruleId: verdict.rule.id,
            reason: `Approved by ${approvals.map((a) => `user:${a.by}`).join(' and ')}.`,
            charge: verdict.decision === 'allow' ? verdict.charge : null,
          };
          if (allowed.charge) await repo.add(wid, action.agentId, allowed.charge, allowed.charge.amount);
          if (allowed.payment) allowed.receipt = await receipts.issueInWrite(allowed, true, now);
          await ledger.record({
            workspaceId: wid,
            actor: who.actor,
            kind: 'action.allowed',
            subject: action.id,
            data: { approvalId: approval.id, ruleId: verdict.rule.id, receipt: allowed.receipt !== null, hum: true },
          });
          await repo.putAction(allowed);
        }
        await settleApproval(decided);
        return { kind: 'decided', approval: await view(decided, now) };
      });
    },

    async deny(wid: string, aprId: string, who: Decider, note: string | null): Promise<ApproveOutcome> {
      return store.write(async (): Promise<ApproveOutcome> => {
        const now = clock.now();
        const freeze = await repo.approval(wid, aprId);
        if (freeze?.freeze) return decideFreezeInWrite(freeze, who, false, note, now);
        const { approval, action } = await pendingInWrite(wid, aprId);
        if (approval.status !== 'pending') throw closed(approval);
        if (Date.parse(approval.expiresAt) <= now)
          return { kind: 'expired', approval: await view(await expireInWrite(approval, action), now) };
        checkDecider(approval, (await repo.agent(wid, action.agentId))?.actsFor ?? null, who);
        const denied: ApprovalRecord = {
          ...approval,
          status: 'denied',
          decidedBy: who.actor,
          reason: note ?? 'denied by a person',
        };
        const evidence = await ledger.record({
          workspaceId: wid,
          actor: who.actor,
          kind: 'approval.denied',
          subject: approval.id,
          data: { actionId: action.id, note, ...viaOf(who) },
        });
        await settleApproval(denied);
        await repo.putAction({
          ...action,
          decision: 'deny',
          status: 'denied',
          signals: ['approval_denied'],
          reason: `Denied by user:${who.userId}${note ? `: ${note}` : '.'}`,
          evidenceRecord: evidence.id,
        });
        return { kind: 'decided', approval: await view(denied, now) };
      });
    },
  };
}

export type Approvals = ReturnType<typeof createApprovals>;
