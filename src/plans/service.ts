import type { Ledger } from '../ledger/service.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { Store } from '../store/index.js';
import type { PlanRecord } from './records.js';
import { plansRepo } from './repo.js';

/**
 * A workspace's plan. The operator's `plan.*` settings are the free plan's allowances; a workspace
 * with a paid subscription in good standing at the operator's billing provider (Stripe) is not
 * held to them. Rules:
 * - Records are written only from billing events signed with the operator's billing secret and
 *   bound to the workspace (stripe/service.ts), in the same write that marks the event processed.
 * - One record per subscription (`subscriptions`, [wid, subscriptionId]); the workspace is paid
 *   when any of its subscriptions is, named after the best of them (status rank, then the most
 *   recent event). An event about one subscription never touches another, so a late update or
 *   the end of an old, replaced subscription cannot downgrade the current one.
 * - Per subscription, an event older (`created`) than the one the record came from changes
 *   nothing. An event of the same second changes it only when its status ranks higher
 *   (STATUS_RANK): Stripe often sends `created` (incomplete) and `updated` (active) in the same
 *   second and in either order; both orders end active. A deleted subscription is final.
 * - Paid: a plan named anything but `free`, whose status is `active`, `trialing` or `past_due`.
 *   `past_due` stays paid because Stripe is still retrying the payment (its retry schedule ends
 *   in `unpaid` or `canceled`, which are not paid); `incomplete`, `incomplete_expired`, `unpaid`,
 *   `canceled` and `paused` are the free plan.
 * - Every change of a record is a `plan.changed` ledger record, saying what the workspace's plan
 *   is after it.
 */
export const PAID_STATUSES: ReadonlySet<string> = new Set(['active', 'trialing', 'past_due']);

/**
 * Which of two same-second events about one subscription wins. Terminal statuses first (Stripe
 * never moves a subscription out of them), then the paid ones, best first; unknown statuses last.
 */
export const STATUS_RANK: Readonly<Record<string, number>> = {
  canceled: 9,
  incomplete_expired: 8,
  active: 7,
  trialing: 6,
  past_due: 5,
  unpaid: 4,
  paused: 3,
  incomplete: 2,
};
const rankOf = (r: { status: string; ended: boolean }): number => (r.ended ? 10 : (STATUS_RANK[r.status] ?? 0));

/** The allowances a workspace is held to; null: unlimited. */
export interface PlanAllowances {
  agents: number | null;
  mandateRules: number | null;
  monthlyRequests: number | null;
  people: number | null;
}

/** A subscription as a billing event reports it, in plain terms. */
export interface SubscriptionReport {
  eventId: string;
  /** The event's `created`, unix seconds. */
  eventCreated: number;
  plan: string;
  status: string;
  subscriptionId: string;
  customerId: string | null;
  currentPeriodEnd: string | null;
  ended: boolean;
}

export interface PlanView {
  plan: string;
  paid: boolean;
  allowances: PlanAllowances;
  /** The subscription the plan comes from: the best paid one, else the one changed last. */
  subscription: Omit<PlanRecord, 'workspaceId'> | null;
}

const UNLIMITED: PlanAllowances = { agents: null, mandateRules: null, monthlyRequests: null, people: null };

export function createPlans(deps: { store: Store; clock: Clock; ledger: Ledger; free: PlanAllowances }): Plans {
  const { store, clock, ledger, free } = deps;
  const repo = plansRepo(store);

  const paid = (r: PlanRecord | undefined): boolean =>
    r !== undefined && !r.ended && r.plan !== 'free' && PAID_STATUSES.has(r.status);

  /** The subscription that names the workspace's plan: the best paid one, else the one changed last. */
  const current = async (wid: string): Promise<PlanRecord | undefined> => {
    const all = await repo.of(wid);
    const best = all
      .filter(paid)
      .sort(
        (a, b) =>
          rankOf(b) - rankOf(a) || b.eventCreated - a.eventCreated || a.subscriptionId.localeCompare(b.subscriptionId),
      )[0];
    return best ?? all.sort((a, b) => b.eventCreated - a.eventCreated || b.updatedAt.localeCompare(a.updatedAt))[0];
  };
  const summary = async (wid: string) => {
    const r = await current(wid);
    return { plan: paid(r) ? r!.plan : 'free', paid: paid(r) };
  };

  return {
    /** The allowances the workspace is held to now (read on every check; another process may write). */
    async allowances(wid: string): Promise<PlanAllowances> {
      return paid(await current(wid)) ? UNLIMITED : free;
    },

    /** Whether the subscription is one of the workspace's (known from its bound events). */
    has(wid: string, subscriptionId: string): Promise<boolean> {
      return repo.has(wid, subscriptionId);
    },

    /**
     * The workspaces that have the subscription (known from their bound events): one, normally;
     * more only when its `metadata.workspaceId` was changed at Stripe. Reads every workspace's
     * subscriptions (one record each), for the rare failed invoice that names no workspace.
     */
    async workspacesWith(subscriptionId: string): Promise<string[]> {
      return (await repo.all()).filter((r) => r.subscriptionId === subscriptionId).map((r) => r.workspaceId);
    },

    async view(wid: string): Promise<PlanView> {
      const r = await current(wid);
      if (!r) return { plan: 'free', paid: false, allowances: free, subscription: null };
      const isPaid = paid(r);
      const { workspaceId: _w, ...subscription } = r;
      return { plan: isPaid ? r.plan : 'free', paid: isPaid, allowances: isPaid ? UNLIMITED : free, subscription };
    },

    /**
     * Inside a write: applies a subscription report to its subscription's record. Returns whether
     * the record changed (false for an older event, a same-second one that ranks no higher, or any
     * event about a subscription already deleted).
     */
    async applyInWrite(wid: string, report: SubscriptionReport, actor: string): Promise<boolean> {
      const existing = await repo.get(wid, report.subscriptionId);
      const incoming = { status: report.ended ? 'canceled' : report.status, ended: report.ended };
      if (existing) {
        if (existing.ended) return false;
        if (report.eventCreated < existing.eventCreated) return false;
        if (report.eventCreated === existing.eventCreated && rankOf(incoming) <= rankOf(existing)) return false;
      }
      const before = await summary(wid);
      const record: PlanRecord = {
        workspaceId: wid,
        plan: report.plan,
        status: incoming.status,
        ended: incoming.ended,
        subscriptionId: report.subscriptionId,
        customerId: report.customerId,
        currentPeriodEnd: report.currentPeriodEnd,
        eventId: report.eventId,
        eventCreated: report.eventCreated,
        lastPaymentFailedAt: existing?.lastPaymentFailedAt ?? null,
        updatedAt: isoAt(clock.now()),
      };
      await repo.put(record);
      const after = await summary(wid);
      await ledger.record({
        workspaceId: wid,
        actor,
        kind: 'plan.changed',
        subject: report.subscriptionId,
        data: {
          plan: record.plan,
          status: record.status,
          paid: paid(record),
          eventId: report.eventId,
          previous: existing ? { plan: existing.plan, status: existing.status, paid: paid(existing) } : null,
          workspace: { before, after },
        },
      });
      return true;
    },

    /**
     * Inside a write: a failed payment of one of the workspace's subscriptions is noted on its
     * record and in the ledger; the status itself follows the subscription's own events.
     */
    async paymentFailedInWrite(
      wid: string,
      subscriptionId: string | null,
      eventId: string,
      actor: string,
    ): Promise<boolean> {
      const existing = subscriptionId === null ? undefined : await repo.get(wid, subscriptionId);
      if (!existing) return false;
      const at = isoAt(clock.now());
      await repo.put({ ...existing, lastPaymentFailedAt: at, updatedAt: at });
      await ledger.record({
        workspaceId: wid,
        actor,
        kind: 'plan.payment_failed',
        subject: existing.subscriptionId,
        data: { plan: existing.plan, status: existing.status, eventId },
      });
      return true;
    },
  };
}

/**
 * A workspace's plan: the allowances it is held to (the free plan's unless a paid subscription
 * says otherwise) and the subscriptions that set them. Reads and writes the `plans` table (one
 * record per subscription of a workspace); a change of plan is a ledger record.
 */
export interface Plans {
  /** The allowances the workspace is held to now (read on every check; another process may write). */
  allowances(wid: string): Promise<PlanAllowances>;
  /** Whether the subscription is one of the workspace's (known from its bound events). */
  has(wid: string, subscriptionId: string): Promise<boolean>;
  /**
   * The workspaces that have the subscription: one, normally; more only when its
   * `metadata.workspaceId` was changed at Stripe. Reads every workspace's subscriptions.
   */
  workspacesWith(subscriptionId: string): Promise<string[]>;
  /** The plan as the console shows it: its name, whether it is paid, its allowances and its subscription. */
  view(wid: string): Promise<PlanView>;
  /**
   * Inside a write: applies a subscription report to its subscription's record. Returns whether
   * the record changed (false for an older event, a same-second one that ranks no higher, or any
   * event about a subscription already deleted).
   */
  applyInWrite(wid: string, report: SubscriptionReport, actor: string): Promise<boolean>;
  /**
   * Inside a write: a failed payment of one of the workspace's subscriptions is noted on its
   * record and in the ledger; the status itself follows the subscription's own events.
   */
  paymentFailedInWrite(wid: string, subscriptionId: string | null, eventId: string, actor: string): Promise<boolean>;
}
