import { AppError } from '../../errors/app-error.js';
import type { Ledger } from '../../ledger/service.js';
import { isoAt, type Clock } from '../../lib/clock.js';
import type { Plans, SubscriptionReport } from '../../plans/service.js';
import type { CardMerchant, Cards } from '../cards.js';
import type { HookEvents } from '../hook-events.js';
import type { StripeSigner } from './signature.js';
import {
  refId,
  type StripeAuthorization,
  type StripeEvent,
  type StripeInvoice,
  type StripeMerchantData,
  type StripeSubscription,
  type StripeTransaction,
} from './schemas.js';

/**
 * The payment provider's events (Stripe Issuing and Billing), verified before they come here
 * (signature.ts, which says who signed: the workspace's own Stripe account, the operator's billing
 * endpoint, or both). Rules:
 * - `created` more than FUTURE_SKEW_S ahead of our clock is refused (400, field `created`; a
 *   transaction's own `created` likewise): an event from the future would otherwise outrank every
 *   later one. Every date in a signed body is
 *   capped (schemas.ts), so no signed input makes the server fail.
 * - Issuing events decide the workspace's cards, so they must be signed with the workspace's own
 *   secret; signed only with the operator's billing secret they are refused (403 forbidden).
 *   - `issuing_authorization.request`: decided at the gate as the card's agent (cards.ts).
 *     Answered in Stripe's synchronous shape, `{ approved, metadata: { svc_action_id?,
 *     svc_reason } }` with the `Stripe-Version` header Stripe requires (the event's own
 *     `api_version`, else the version of the stripe package). Amount from
 *     `pending_request.amount` (else `amount`), currency upper-cased, merchant from
 *     `merchant_data` (the host of `url` when there is one, else the name; `category_code` as the
 *     MCC).
 *   - `issuing_transaction.created`: imported and reconciled as the card's charge, keyed by the
 *     transaction id. Stripe's sign: a `capture` takes money (negative amount) and is a posted
 *     charge; a `refund` gives it back (positive) and is a refund; amounts are kept positive.
 *     Zero amounts and other transaction types are received and change nothing.
 * - Billing events (`customer.subscription.created|updated|deleted`, `invoice.payment_failed`)
 *   are the operator's business: a workspace's plan is what the operator bills it. They change a
 *   plan (plans/service.ts) only when signed with the operator's billing secret AND bound to the
 *   workspace in the address:
 *   - a subscription by its `metadata.workspaceId`, equal to the `{wid}` of the address;
 *   - a failed invoice by its subscription's metadata (`parent.subscription_details.metadata`,
 *     or `subscription_details.metadata` in older versions) when present, else by the
 *     subscription being one of the workspace's already.
 *   Operator-signed but bound elsewhere (or nowhere): answered `{ received: true }`, nothing stored
 *   or recorded (every endpoint of the operator's account receives every workspace's events; one
 *   workspace's ledger never names another's subscription). Signed only with the workspace's own
 *   secret: answered `{ received: true, ignored }` (200, so Stripe does not retry), changing no
 *   plan, and recorded once as `plan.event_ignored` in the workspace's ledger.
 *   Plan name: the first item's price `lookup_key`, else the subscription's `metadata.plan`, else
 *   `paid`. `invoice.payment_failed`: noted on the subscription's record.
 * - The operator's billing endpoint (`POST /v1/hooks/stripe/billing`, `handleBilling`): one
 *   Stripe endpoint for every billed workspace, verified with the operator's billing secrets only.
 *   Each billing event is routed to the workspace it is bound to by the same binding as above
 *   (its subscription's `metadata.workspaceId`; a failed invoice without one, the one workspace
 *   its subscription belongs to), then applied exactly as on the workspace's route (same source,
 *   same plans service). Named workspace that does not exist, no binding, or a subscription known
 *   in several workspaces: `{ received: true, ignored }`, nothing stored or recorded (there is no
 *   workspace to record it in). Issuing events are refused there (403 forbidden); other types are
 *   received and change nothing.
 * - Each event id once (hook-events.ts; the operator's events apart from the workspace's, kept
 *   under [wid, BILLING_SOURCE, id] whichever endpoint they came to, so an event delivered to the
 *   billing endpoint and to a workspace's endpoint during a migration is applied once): a
 *   redelivery gets the first answer and changes nothing. Event types not listed are received
 *   (`{ received: true }`) and change nothing.
 */
/** The version of the stripe package, for an event without its own; the package is loaded only then. */
async function defaultStripeVersion(): Promise<string> {
  return (await import('stripe')).default.API_VERSION;
}
const ACTOR = 'stripe';
const SUBSCRIPTION_EVENTS = new Set([
  'customer.subscription.created',
  'customer.subscription.updated',
  'customer.subscription.deleted',
]);
const BILLING_EVENTS = new Set([...SUBSCRIPTION_EVENTS, 'invoice.payment_failed']);
const ISSUING_EVENTS = new Set(['issuing_authorization.request', 'issuing_transaction.created']);
/** Where the answers to events signed with the operator's billing secret are kept (apart from the workspace's). */
const BILLING_SOURCE = 'stripe-billing';
/** How far ahead of our clock an event's `created` may be (Stripe's own signature tolerance). */
export const FUTURE_SKEW_S = 300;
export const IGNORED_BILLING = "billing events change a plan only when signed with the operator's billing secret";
/** Why the operator's billing endpoint routed an event to no workspace (answered 200, nothing stored). */
export const UNBOUND_BILLING = 'the event names no workspace: set metadata.workspaceId on the subscription';
export const UNKNOWN_WORKSPACE = 'the workspace named by metadata.workspaceId does not exist here';
export const AMBIGUOUS_SUBSCRIPTION = 'the invoice names no workspace and its subscription belongs to more than one';

export interface StripeAnswer {
  body: Record<string, unknown>;
  /** Response headers Stripe expects (the synchronous authorization answer's `stripe-version`). */
  headers: Record<string, string>;
}

const secondsToIso = (s: number | null | undefined): string | null => (typeof s === 'number' ? isoAt(s * 1000) : null);
const invoiceSubscription = (invoice: StripeInvoice): string | null =>
  refId(invoice.subscription) ?? refId(invoice.parent?.subscription_details?.subscription);

/** The host of a merchant's url, lower case; null when there is none or it does not parse. */
function hostOf(url: string | null | undefined): string | null {
  if (!url) return null;
  try {
    const host = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(url) ? url : `https://${url}`).hostname.toLowerCase();
    return host.length > 0 ? host : null;
  } catch {
    return null;
  }
}

export function merchantFrom(m: StripeMerchantData): CardMerchant {
  const mcc = m.category_code && /^\d{4}$/.test(m.category_code) ? m.category_code : null;
  return { name: (m.name || m.network_id || 'unknown merchant').slice(0, 200), domain: hostOf(m.url), mcc };
}

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

export function createStripeEvents(deps: {
  cards: Cards;
  plans: Plans;
  hookEvents: HookEvents;
  ledger: Ledger;
  clock: Clock;
  workspaceExists: (wid: string) => Promise<boolean> | boolean;
}) {
  const { cards, plans, hookEvents, ledger, clock, workspaceExists } = deps;
  const versionOf = async (event: StripeEvent) => ({
    'stripe-version': event.api_version || (await defaultStripeVersion()),
  });
  const received = { received: true };

  /**
   * A subscription: its `metadata.workspaceId`. A failed invoice: its subscription's metadata
   * when present, else its subscription (to be one of a workspace's already).
   */
  const bindingOf = (event: StripeEvent): Binding => {
    if (SUBSCRIPTION_EVENTS.has(event.type)) {
      const named = (event.data.object as unknown as StripeSubscription).metadata?.workspaceId;
      return named === undefined ? null : { workspaceId: named };
    }
    const invoice = event.data.object as unknown as StripeInvoice;
    const named =
      invoice.parent?.subscription_details?.metadata?.workspaceId ??
      invoice.subscription_details?.metadata?.workspaceId;
    if (named !== undefined) return { workspaceId: named };
    const subscriptionId = invoiceSubscription(invoice);
    return subscriptionId === null ? null : { subscriptionId };
  };

  /** Whether a billing event is bound to the workspace in the address. */
  const boundTo = async (wid: string, event: StripeEvent): Promise<boolean> => {
    const binding = bindingOf(event);
    if (binding === null) return false;
    return 'workspaceId' in binding ? binding.workspaceId === wid : await plans.has(wid, binding.subscriptionId);
  };

  /** An operator-signed billing event bound to `wid`: applied to its plan once per event id (the operator's source). */
  const applyBilling = async (wid: string, event: StripeEvent): Promise<StripeAnswer> => {
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

  const billing = async (wid: string, signers: readonly StripeSigner[], event: StripeEvent): Promise<StripeAnswer> => {
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
    return applyBilling(wid, event);
  };

  /** The operator's billing endpoint: the workspace an event is routed to, or why it is routed nowhere. */
  const routeOf = async (event: StripeEvent): Promise<{ workspaceId: string } | { ignored: string }> => {
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
  };

  /** 400 for an event (or a transaction) dated more than FUTURE_SKEW_S ahead of our clock. */
  const notAhead = (event: StripeEvent): void => {
    const latest = Math.floor(clock.now() / 1000) + FUTURE_SKEW_S;
    const ahead = (field: string) =>
      new AppError('invalid_request', {
        details: { errors: [{ field, message: `"${field}" is more than five minutes ahead of this server's clock` }] },
        fix: "Deliver each event as Stripe made it, with this server's clock in sync.",
      });
    if (event.created > latest) throw ahead('created');
    if (
      event.type === 'issuing_transaction.created' &&
      (event.data.object as unknown as StripeTransaction).created > latest
    )
      throw ahead('data.object.created');
  };

  return {
    /**
     * An event verified on the operator's billing endpoint (signed with a billing secret): routed
     * to the workspace it is bound to, then applied as on the workspace's route (same source, so
     * one event delivered to both endpoints is applied once).
     */
    async handleBilling(event: StripeEvent): Promise<StripeAnswer> {
      notAhead(event);
      if (ISSUING_EVENTS.has(event.type)) {
        throw new AppError('forbidden', {
          message: "Issuing events decide a workspace's cards: the operator's billing endpoint does not take them.",
          fix: "Send Issuing events to the workspace's own endpoint (/v1/hooks/stripe/{wid}), signed with its own signing secret; subscribe this endpoint to billing events only.",
        });
      }
      if (!BILLING_EVENTS.has(event.type)) return { body: received, headers: {} };
      const route = await routeOf(event);
      if ('ignored' in route) return { body: { received: true, ignored: route.ignored }, headers: {} };
      return applyBilling(route.workspaceId, event);
    },

    async handle(wid: string, signers: readonly StripeSigner[], event: StripeEvent): Promise<StripeAnswer> {
      notAhead(event);
      if (BILLING_EVENTS.has(event.type)) return billing(wid, signers, event);
      if (ISSUING_EVENTS.has(event.type) && !signers.includes('workspace')) {
        throw new AppError('forbidden', {
          message:
            "Issuing events decide this workspace's cards: they must be signed with the workspace's own Stripe signing secret.",
          fix: "Send the operator's billing endpoint billing events only (customer.subscription.*, invoice.payment_failed).",
        });
      }

      const seen = await hookEvents.answered(wid, ACTOR, event.id);
      if (seen)
        return { body: seen, headers: event.type === 'issuing_authorization.request' ? await versionOf(event) : {} };

      if (event.type === 'issuing_authorization.request') {
        const auth = event.data.object as unknown as StripeAuthorization;
        const requested = auth.pending_request ?? { amount: auth.amount, currency: auth.currency };
        const body = await cards.authorize(
          wid,
          'stripe',
          {
            eventId: event.id,
            cardId: refId(auth.card)!,
            amount: requested.amount,
            currency: requested.currency.toUpperCase(),
            merchant: merchantFrom(auth.merchant_data),
          },
          (decision) => ({
            approved: decision.approved,
            // Stripe keeps metadata values up to 500 characters.
            metadata: {
              ...(decision.actionId ? { svc_action_id: decision.actionId } : {}),
              svc_reason: decision.reason.slice(0, 500),
            },
          }),
        );
        return { body, headers: await versionOf(event) };
      }

      if (event.type === 'issuing_transaction.created') {
        const tx = event.data.object as unknown as StripeTransaction;
        const kind =
          tx.type === 'capture'
            ? tx.amount < 0
              ? 'posted'
              : 'refunded'
            : tx.type === 'refund'
              ? tx.amount > 0
                ? 'refunded'
                : 'posted'
              : null;
        const body = await hookEvents.processOnce(wid, ACTOR, event.id, async () => {
          if (kind !== null && tx.amount !== 0) {
            await cards.importInWrite(wid, 'stripe', {
              eventId: tx.id,
              cardId: refId(tx.card)!,
              kind,
              amount: Math.abs(tx.amount),
              currency: tx.currency.toUpperCase(),
              merchant: merchantFrom(tx.merchant_data),
              createdAt: isoAt(tx.created * 1000),
            });
          }
          return received;
        });
        return { body, headers: {} };
      }

      return { body: received, headers: {} };
    },
  };
}

export type StripeEvents = ReturnType<typeof createStripeEvents>;
