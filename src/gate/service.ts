import { createHash } from 'node:crypto';
import { AppError } from '../errors/app-error.js';
import { canonicalJson } from '../lib/canonical-json.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import { bounded, metrics } from '../lib/metrics.js';
import { formatMoney } from '../lib/money.js';
import type { Ledger } from '../ledger/service.js';
import { evaluate, usageQueries, type ActionFacts, type Evaluation } from '../mandates/evaluate.js';
import type { Presigned, Receipts } from '../receipts/service.js';
import { readStanding } from '../agents/standing.js';
import type { Store } from '../store/index.js';
import type { ActionRecord } from './records.js';
import { gateRepo } from './repo.js';
import type { AuthorizeInput, SettleInput } from './schemas.js';

/**
 * The action gate (docs/gate.md#the-gate).
 * Rules:
 * - One transaction per request holds the decision: the action, its idempotency record, its
 *   ledger record, the period usage and the receipt commit together, flushed before the
 *   answer. If any of it cannot be written the request fails: never an allow without its record.
 * - The agent's standing and mandate are read inside that transaction, from the store: a freeze
 *   written by another process applies to the very next request. A stopped agent gets a deny
 *   decision with signal `agent_frozen`, not an error.
 * - Writes serialise on the store's lock, so concurrent requests cannot together overrun a
 *   period limit, and racing retries with one idempotency key make one action.
 * - Same idempotency key and same request: the same action again, never a second decision.
 *   Same key, another request: 409 idempotency_conflict. Keys are kept 24 hours per agent.
 * - Only an allowed, unsettled action can be settled; a failed or cancelled settlement (or one
 *   completed with amount 0) releases its amount from the period and withdraws its receipt
 *   (online checks then answer `revoked`); a settled amount replaces the authorized one, and is
 *   never above it (more than was authorized needs a new authorization). Once a merchant has
 *   checked the receipt online, its amount keeps counting and the receipt stands.
 * - An action of another agent (or workspace) is not found.
 */
export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;

export interface GateCaller {
  workspaceId: string;
  agentId: string;
}

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
  };
}

function fingerprint(input: AuthorizeInput, sessionId: string | null): string {
  const { idempotencyKey: _ignored, ...request } = input;
  return createHash('sha256')
    .update(canonicalJson({ ...request, sessionId }))
    .digest('base64url');
}

export function createGate(deps: {
  store: Store;
  clock: Clock;
  ids: IdSource;
  ledger: Ledger;
  receipts: Receipts;
  approvalTtlMs: number;
}) {
  const { store, clock, ids, ledger, receipts } = deps;
  const repo = gateRepo(store);

  /**
   * The decision on the store as it reads now: inside a write, through the write's transaction, so
   * the backend validates every read it rests on (standing, mandate, period usage).
   */
  const decide = async (
    c: GateCaller,
    input: AuthorizeInput,
    nowMs: number,
  ): Promise<Evaluation | { decision: 'deny'; rule: null; signals: ['agent_frozen']; reason: string }> => {
    const [standing, rules] = await Promise.all([
      readStanding(store, c.workspaceId, c.agentId),
      repo.rules(c.workspaceId, c.agentId),
    ]);
    if (standing.stopped) {
      const by =
        standing.stoppedBy === 'workspace' ? 'Every agent of this workspace is stopped' : 'This agent is stopped';
      return {
        decision: 'deny',
        rule: null,
        signals: ['agent_frozen'],
        reason: `${by} (hold ${standing.hold}: ${standing.reason}).`,
      };
    }
    const facts: ActionFacts = {
      type: input.type,
      amount: input.payment?.amount ?? null,
      currency: input.payment?.currency ?? null,
      merchant: input.payment?.merchant ?? null,
      domain: input.target?.domain ?? null,
    };
    const usage = await repo.lookup(c.workspaceId, c.agentId, usageQueries(rules, facts, nowMs));
    return evaluate(rules, facts, usage, nowMs);
  };

  return {
    /**
     * Decides one action request. `replayed`: an idempotent retry answered with the first action.
     * `cannotWait`: the asker must be answered now (a card network's authorization): a decision
     * that would wait for a person is a deny saying so, and no approval is opened that nobody's
     * answer could still reach.
     * `inWrite`: the caller's own writes about this decision (an integration's stored answer),
     * made inside the decision's transaction, so both land with one flush or neither does; it is
     * called for a replayed request too. It may be async, and it may run MORE THAN ONCE (the store
     * retries a write that conflicted with another): it may only read and write the store and
     * compute; any outside effect (network, logs, metrics, events) belongs after `authorize`.
     */
    async authorize(
      c: GateCaller,
      input: AuthorizeInput,
      options: {
        sessionId?: string | undefined;
        cannotWait?: boolean;
        inWrite?: (action: ActionView, replayed: boolean) => void | Promise<void>;
      } = {},
    ): Promise<{ action: ActionView; replayed: boolean }> {
      const sessionId = input.session?.id ?? options.sessionId ?? null;
      const idemKey = input.idempotencyKey ?? null;
      const print = idemKey === null ? '' : fingerprint(input, sessionId);
      const id = ids.id('act');
      const now = clock.now();
      // Decide once against what the store holds now and, for a payment it would allow, sign its
      // receipt ahead on the thread pool. The transaction below decides again on the state it
      // commits against; only that decision counts, and the receipt signed ahead is used only if
      // it, too, allows (the claims depend on nothing else).
      let presigned: Presigned | null = null;
      if (
        input.payment &&
        (idemKey === null || !(await repo.idempotency(c.workspaceId, c.agentId, idemKey))) &&
        (await decide(c, input, now)).decision === 'allow'
      ) {
        presigned = await receipts.presign(
          { id, agentId: c.agentId, type: input.type, payment: input.payment },
          false,
          now,
        );
      }
      const decided = await store.write(async (): Promise<{ action: ActionView; replayed: boolean }> => {
        if (idemKey !== null) {
          const seen = await repo.idempotency(c.workspaceId, c.agentId, idemKey);
          if (seen && Date.parse(seen.expiresAt) > now) {
            if (seen.fingerprint !== print) {
              throw new AppError('idempotency_conflict', {
                message: `The idempotency key was first used for a different request (action ${seen.actionId}).`,
              });
            }
            const first = toActionView((await repo.action(c.workspaceId, seen.actionId))!);
            await options.inWrite?.(first, true);
            return { action: first, replayed: true };
          }
        }
        const decided = await decide(c, input, now);
        const verdict =
          decided.decision === 'review' && options.cannotWait
            ? {
                decision: 'deny' as const,
                rule: null,
                signals: ['approval_unavailable'],
                reason: `${decided.reason} This request must be answered at once and cannot wait for a person.`,
              }
            : decided;
        const action: ActionRecord = {
          id,
          workspaceId: c.workspaceId,
          agentId: c.agentId,
          type: input.type,
          summary: input.summary,
          payment: input.payment ?? null,
          target: input.target ?? null,
          decision: verdict.decision,
          signals: [...verdict.signals],
          reason: verdict.reason,
          status:
            verdict.decision === 'allow' ? 'allowed' : verdict.decision === 'review' ? 'pending_approval' : 'denied',
          ruleId: verdict.rule?.id ?? null,
          approvalId: null,
          receipt: null,
          evidenceRecord: null,
          settlement: null,
          charge: verdict.decision === 'allow' ? verdict.charge : null,
          sessionId,
          idempotencyKey: idemKey,
          metadata: input.metadata ?? null,
          createdAt: isoAt(now),
        };
        if (verdict.decision === 'review') {
          const rule = verdict.rule;
          action.approvalId = ids.id('apr');
          const requestedFor = (await repo.agent(c.workspaceId, c.agentId))?.actsFor ?? null;
          await repo.putApproval({
            id: action.approvalId,
            workspaceId: c.workspaceId,
            actionId: action.id,
            agentId: c.agentId,
            status: 'pending',
            approvers: rule.approval?.approvers ?? null,
            approvals: [],
            requiredApprovals: rule.approval?.count ?? 1,
            separationOfDuties: rule.approval?.separationOfDuties ?? false,
            createdAt: action.createdAt,
            expiresAt: isoAt(now + deps.approvalTtlMs),
            decidedBy: null,
            reason: null,
            requestedFor,
          });
        }
        if (action.charge) await repo.add(c.workspaceId, c.agentId, action.charge, action.charge.amount);
        if (verdict.decision === 'allow' && action.payment)
          action.receipt = await receipts.issueInWrite(action, false, now, presigned);
        const evidence = await ledger.record({
          workspaceId: c.workspaceId,
          actor: `agent:${c.agentId}`,
          kind: `action.${action.status}`,
          subject: action.id,
          data: {
            type: action.type,
            summary: action.summary,
            payment: action.payment,
            target: action.target,
            decision: action.decision,
            signals: action.signals,
            reason: action.reason,
            ruleId: action.ruleId,
            approvalId: action.approvalId,
            receipt: action.receipt !== null,
            sessionId: action.sessionId,
          },
        });
        if (verdict.decision !== 'allow') action.evidenceRecord = evidence.id;
        await repo.putAction(action);
        if (idemKey !== null) {
          await repo.putIdempotency(c.workspaceId, c.agentId, idemKey, {
            actionId: action.id,
            fingerprint: print,
            expiresAt: isoAt(now + IDEMPOTENCY_TTL_MS),
          });
        }
        const view = toActionView(action);
        await options.inWrite?.(view, false);
        return { action: view, replayed: false };
      });
      // Counted once durable, and once per decision (a replay decided nothing new).
      if (!decided.replayed) countDecision(decided.action.decision, decided.action.signals);
      return decided;
    },

    async get(c: GateCaller, id: string): Promise<ActionView> {
      const action = await repo.action(c.workspaceId, id);
      if (!action || action.agentId !== c.agentId)
        throw new AppError('not_found', { message: 'No action with that id for this agent.' });
      // A waiting approval past its time reads as the deny the expiry sweep is about to write.
      const approval =
        action.status === 'pending_approval' && action.approvalId
          ? await repo.approval(c.workspaceId, action.approvalId)
          : undefined;
      if (approval && approval.status === 'pending' && Date.parse(approval.expiresAt) <= clock.now()) {
        return toActionView({
          ...action,
          decision: 'deny',
          status: 'denied',
          signals: ['approval_expired'],
          reason: `Nobody decided approval ${approval.id} before ${approval.expiresAt}.`,
        });
      }
      return toActionView(action);
    },

    async settle(c: GateCaller, id: string, input: SettleInput): Promise<ActionView> {
      return store.write(async () => {
        const action = await repo.action(c.workspaceId, id);
        if (!action || action.agentId !== c.agentId)
          throw new AppError('not_found', { message: 'No action with that id for this agent.' });
        if (action.status === 'settled')
          throw new AppError('already_settled', {
            message: `Action ${id} was already settled (${action.settlement!.status}).`,
          });
        if (action.status !== 'allowed')
          throw new AppError('not_allowed', {
            message: `Action ${id} was not allowed (status ${action.status}), so it cannot be settled.`,
          });
        if (input.amount !== undefined && !action.payment) {
          throw new AppError('invalid_amount', {
            message: 'This action carries no payment, so its settlement takes no amount.',
            details: { errors: [{ field: 'amount', message: '"amount" is only for actions with a payment' }] },
          });
        }
        if (input.amount !== undefined && action.payment && input.amount > action.payment.amount) {
          throw new AppError('invalid_amount', {
            message: `The settled amount ${formatMoney(input.amount, action.payment.currency)} is above the ${formatMoney(action.payment.amount, action.payment.currency)} that was authorized.`,
            fix: 'Settle at most the authorized amount; ask again (authorize) for anything more.',
            details: {
              errors: [
                {
                  field: 'amount',
                  message: `"amount" must be at most ${action.payment.amount} (minor units: the authorized ${formatMoney(action.payment.amount, action.payment.currency)})`,
                },
              ],
            },
          });
        }
        const now = clock.now();
        // Completed: what was paid (the authorized amount unless told otherwise). Failed or
        // cancelled: nothing was paid; an amount is recorded only if the agent names one.
        const amount =
          input.status === 'completed' ? (input.amount ?? action.payment?.amount ?? null) : (input.amount ?? null);
        // Nothing paid: failed, cancelled, or completed with amount 0.
        const nothingPaid = input.status !== 'completed' || amount === 0;
        // A receipt a merchant has checked online may have been taken as payment: its amount keeps
        // counting whatever the agent reports, and it is never withdrawn after the fact.
        const seen = action.receipt !== null && (await repo.receiptSeen(action.id));
        if (action.charge) {
          const paid = nothingPaid ? 0 : (amount ?? action.charge.amount);
          const kept = seen ? Math.max(paid, action.charge.amount) : paid;
          await repo.add(c.workspaceId, c.agentId, action.charge, kept - action.charge.amount);
        }
        if (nothingPaid && action.receipt !== null && !seen) {
          await repo.withdrawReceipt(action.id, {
            at: isoAt(now),
            reason: `the action was settled ${input.status}${input.status === 'completed' ? ' with amount 0' : ''}`,
          });
        }
        const settled: ActionRecord = {
          ...action,
          status: 'settled',
          settlement: { status: input.status, amount, at: isoAt(now) },
        };
        await ledger.record({
          workspaceId: c.workspaceId,
          actor: `agent:${c.agentId}`,
          kind: 'action.settled',
          subject: id,
          data: { status: input.status, amount, authorizedAmount: action.payment?.amount ?? null },
        });
        await repo.putAction(settled);
        return toActionView(settled);
      });
    },
  };
}

export type Gate = ReturnType<typeof createGate>;

/** One count per decision, under each of its signals (signals are the product's own closed set). */
function countDecision(decision: string, signals: readonly string[]): void {
  if (signals.length === 0) metrics.decisions.inc({ decision, signal: 'none' });
  for (const signal of signals) metrics.decisions.inc({ decision, signal: bounded(signal) });
}
