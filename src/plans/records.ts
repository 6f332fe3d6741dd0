/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts; ids: src/lib/ids.ts). Types only: the store imports
 * them, so nothing here runs (test/architecture/layers.test.ts holds it to that).
 */

/**
 * One subscription of a workspace as the operator's billing provider (Stripe) last reported it;
 * the workspace's plan is derived from all of them (plans/service.ts). None: the free plan.
 * `eventCreated` is the provider event's `created` (unix seconds): an older event never overwrites it.
 */
export interface PlanRecord {
  workspaceId: string;
  plan: string;
  status: string;
  subscriptionId: string;
  customerId: string | null;
  currentPeriodEnd: string | null;
  eventId: string;
  eventCreated: number;
  /** Stripe deleted the subscription: final, no later event revives it. */
  ended: boolean;
  lastPaymentFailedAt: string | null;
  updatedAt: string;
}
