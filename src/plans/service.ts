import type { Ledger } from '../ledger/service.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { PlanRecord, Store } from '../store/index.js';

/**
 * A workspace's plan. The operator's `plan.*` settings are the free plan's allowances; a workspace
 * whose billing provider (Stripe) reports a paid subscription in good standing is not held to them.
 * Rules:
 * - The record (`workspacePlans`) is written only from verified billing events (stripe.ts), in the
 *   same write that marks the event processed. An event older (`created`) than the one the record
 *   came from changes nothing, so deliveries arriving out of order cannot roll a plan back.
 * - A subscription ending (`deleted`) only ends the plan it is the subscription of; the end of an
 *   older, replaced subscription leaves the newer one alone.
 * - Paid: a plan named anything but `free`, whose status is `active`, `trialing` or `past_due`.
 *   `past_due` stays paid because Stripe is still retrying the payment (its retry schedule ends
 *   in `unpaid` or `canceled`, which are not paid); `incomplete`, `incomplete_expired`, `unpaid`,
 *   `canceled` and `paused` are the free plan.
 * - Every change of the record is a `plan.changed` ledger record.
 */
export const PAID_STATUSES: ReadonlySet<string> = new Set(['active', 'trialing', 'past_due']);

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
  subscription: Omit<PlanRecord, 'workspaceId'> | null;
}

const UNLIMITED: PlanAllowances = { agents: null, mandateRules: null, monthlyRequests: null, people: null };

export function createPlans(deps: { store: Store; clock: Clock; ledger: Ledger; free: PlanAllowances }) {
  const { store, clock, ledger, free } = deps;
  const t = store.tables;

  const paid = (r: PlanRecord | undefined): boolean => r !== undefined && r.plan !== 'free' && PAID_STATUSES.has(r.status);

  return {
    /** The allowances the workspace is held to now (read on every check; another process may write). */
    allowances(wid: string): PlanAllowances {
      return paid(t.workspacePlans.get(wid)) ? UNLIMITED : free;
    },

    view(wid: string): PlanView {
      const r = t.workspacePlans.get(wid);
      const isPaid = paid(r);
      if (!r) return { plan: 'free', paid: false, allowances: free, subscription: null };
      const { workspaceId: _w, ...subscription } = r;
      return { plan: isPaid ? r.plan : 'free', paid: isPaid, allowances: isPaid ? UNLIMITED : free, subscription };
    },

    /**
     * Inside a write: applies a subscription report. Returns whether the record changed (false for
     * an older event, or the end of a subscription that is not the workspace's current one).
     */
    applyInWrite(wid: string, report: SubscriptionReport, actor: string): boolean {
      const current = t.workspacePlans.get(wid);
      if (current && report.eventCreated < current.eventCreated) return false;
      if (report.ended && current && current.subscriptionId !== report.subscriptionId) return false;
      const record: PlanRecord = {
        workspaceId: wid, plan: report.plan, status: report.ended ? 'canceled' : report.status,
        subscriptionId: report.subscriptionId, customerId: report.customerId, currentPeriodEnd: report.currentPeriodEnd,
        eventId: report.eventId, eventCreated: report.eventCreated,
        lastPaymentFailedAt: current?.subscriptionId === report.subscriptionId ? current.lastPaymentFailedAt : null,
        updatedAt: isoAt(clock.now()),
      };
      t.workspacePlans.put(wid, record);
      ledger.record({
        workspaceId: wid, actor, kind: 'plan.changed', subject: report.subscriptionId,
        data: {
          plan: record.plan, status: record.status, paid: paid(record), eventId: report.eventId,
          previous: current ? { plan: current.plan, status: current.status, paid: paid(current) } : null,
        },
      });
      return true;
    },

    /**
     * Inside a write: a failed payment of the workspace's current subscription is noted on the
     * record and in the ledger; the status itself follows the subscription's own events.
     */
    paymentFailedInWrite(wid: string, subscriptionId: string | null, eventId: string, actor: string): boolean {
      const current = t.workspacePlans.get(wid);
      if (!current || subscriptionId === null || current.subscriptionId !== subscriptionId) return false;
      const at = isoAt(clock.now());
      t.workspacePlans.put(wid, { ...current, lastPaymentFailedAt: at, updatedAt: at });
      ledger.record({ workspaceId: wid, actor, kind: 'plan.payment_failed', subject: subscriptionId, data: { plan: current.plan, status: current.status, eventId } });
      return true;
    },
  };
}

export type Plans = ReturnType<typeof createPlans>;
