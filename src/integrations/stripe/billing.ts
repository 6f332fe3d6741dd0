import type { Ledger } from '../../ledger/service.js';
import { isoAt } from '../../lib/clock.js';
import type { Plans, SubscriptionReport } from '../../plans/service.js';
import type { HookEvents } from '../hook-events.js';
import { ACTOR, BILLING_SOURCE, SUBSCRIPTION_EVENTS } from './events.js';
import { refId, type StripeEvent, type StripeInvoice, type StripeSubscription } from './schemas.js';
import type { StripeAnswer } from './service.js';
import type { StripeSigner } from './signature.js';

/**
 * Stripe Billing's events (service.ts lists the rules): bound to a workspace by their
 * subscription's metadata (or a failed invoice by its subscription), applied to its plan only when
 * signed with the operator's billing secret, once per event id under the operator's own source.
 */
export const IGNORED_BILLING = "billing events change a plan only when signed with the operator's billing secret";
/** Why the operator's billing endpoint routed an event to no workspace (answered 200, nothing stored). */
export const UNBOUND_BILLING = 'the event names no workspace: set metadata.workspaceId on the subscription';
export const UNKNOWN_WORKSPACE = 'the workspace named by metadata.workspaceId does not exist here';
export const AMBIGUOUS_SUBSCRIPTION = 'the invoice names no workspace and its subscription belongs to more than one';

const received = { received: true };
const secondsToIso = (s: number | null | undefined): string | null => (typeof s === 'number' ? isoAt(s * 1000) : null);
const invoiceSubscription = (invoice: StripeInvoice): string | null =>
  refId(invoice.subscription) ?? refId(invoice.parent?.subscription_details?.subscription);

export function subscriptionReport(event: StripeEvent, sub: StripeSubscription): SubscriptionReport {
  const item = sub.items?.data?.[0];
  const plan = (item?.price?.lookup_key || sub.metadata?.plan || 'paid').slice(0, 200);
  return {
    eventId: event.id,
    eventCreated: event.created,
    plan,
    status: sub.status,
    subscriptionId: sub.id,
    customerId: refId(sub.customer),
    // Newer API versions keep the period on the item; older ones on the subscription.
    currentPeriodEnd: secondsToIso(item?.current_period_end ?? sub.current_period_end),
    ended: event.type === 'customer.subscription.deleted',
  };
}

/** What a billing event names as its workspace (its subscription's metadata), else the subscription to look up. */
type Binding = { workspaceId: string } | { subscriptionId: string } | null;

/**
 * A subscription: its `metadata.workspaceId`. A failed invoice: its subscription's metadata
 * when present, else its subscription (to be one of a workspace's already).
 */
function bindingOf(event: StripeEvent): Binding {
  if (SUBSCRIPTION_EVENTS.has(event.type)) {
    const named = (event.data.object as unknown as StripeSubscription).metadata?.workspaceId;
    return named === undefined ? null : { workspaceId: named };
  }
  const invoice = event.data.object as unknown as StripeInvoice;
  const named =
    invoice.parent?.subscription_details?.metadata?.workspaceId ?? invoice.subscription_details?.metadata?.workspaceId;
  if (named !== undefined) return { workspaceId: named };
  const subscriptionId = invoiceSubscription(invoice);
  return subscriptionId === null ? null : { subscriptionId };
}

export interface BillingDeps {
  plans: Plans;
  hookEvents: HookEvents;
  ledger: Ledger;
  workspaceExists: (wid: string) => Promise<boolean> | boolean;
}

export interface StripeBilling {
  /** A billing event on a workspace's own route: ignored (and recorded once) unless operator-signed and bound to `wid`. */
  onWorkspaceRoute(wid: string, signers: readonly StripeSigner[], event: StripeEvent): Promise<StripeAnswer>;
  /** The operator's billing endpoint: the workspace an event is routed to, or why it is routed nowhere. */
  routeOf(event: StripeEvent): Promise<{ workspaceId: string } | { ignored: string }>;
  /** An operator-signed billing event bound to `wid`: applied to its plan once per event id (the operator's source). */
  apply(wid: string, event: StripeEvent): Promise<StripeAnswer>;
}

export function createStripeBilling(deps: BillingDeps): StripeBilling {
  const { plans, hookEvents, ledger, workspaceExists } = deps;

  /** Whether a billing event is bound to the workspace in the address. */
  const boundTo = async (wid: string, event: StripeEvent): Promise<boolean> => {
    const binding = bindingOf(event);
    if (binding === null) return false;
    return 'workspaceId' in binding ? binding.workspaceId === wid : await plans.has(wid, binding.subscriptionId);
  };

  const apply = async (wid: string, event: StripeEvent): Promise<StripeAnswer> => {
    const change = SUBSCRIPTION_EVENTS.has(event.type)
      ? async () => {
          await plans.applyInWrite(
            wid,
            subscriptionReport(event, event.data.object as unknown as StripeSubscription),
            ACTOR,
          );
        }
      : async () => {
          await plans.paymentFailedInWrite(
            wid,
            invoiceSubscription(event.data.object as unknown as StripeInvoice),
            event.id,
            ACTOR,
          );
        };
    return {
      body: await hookEvents.processOnce(wid, BILLING_SOURCE, event.id, async () => {
        await change();
        return received;
      }),
      headers: {},
    };
  };

  return {
    apply,

    async onWorkspaceRoute(wid, signers, event) {
      if (!signers.includes('operator')) {
        const answer = { received: true, ignored: IGNORED_BILLING };
        return {
          body: await hookEvents.processOnce(wid, ACTOR, event.id, async () => {
            await ledger.record({
              workspaceId: wid,
              actor: ACTOR,
              kind: 'plan.event_ignored',
              subject: event.id,
              data: { type: event.type, reason: "not signed with the operator's billing secret" },
            });
            return answer;
          }),
          headers: {},
        };
      }
      // Bound to this address, and the address names a workspace of this server.
      if (!(await workspaceExists(wid)) || !(await boundTo(wid, event))) return { body: received, headers: {} };
      return apply(wid, event);
    },

    async routeOf(event) {
      const binding = bindingOf(event);
      if (binding === null) return { ignored: UNBOUND_BILLING };
      if ('workspaceId' in binding)
        return (await workspaceExists(binding.workspaceId))
          ? binding
          : { ignored: binding.workspaceId === '' ? UNBOUND_BILLING : UNKNOWN_WORKSPACE };
      const owners = await plans.workspacesWith(binding.subscriptionId);
      return owners.length === 1
        ? { workspaceId: owners[0]! }
        : { ignored: owners.length === 0 ? UNBOUND_BILLING : AMBIGUOUS_SUBSCRIPTION };
    },
  };
}
