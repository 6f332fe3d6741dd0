import { AppError } from '../../errors/app-error.js';
import type { Ledger } from '../../ledger/service.js';
import type { Clock } from '../../lib/clock.js';
import type { Plans } from '../../plans/service.js';
import type { Cards } from '../cards.js';
import type { HookEvents } from '../hook-events.js';
import { createStripeBilling } from './billing.js';
import { ACTOR, BILLING_EVENTS, ISSUING_EVENTS } from './events.js';
import { authorizationAnswer, importTransaction } from './issuing.js';
import type { StripeEvent, StripeTransaction } from './schemas.js';
import type { StripeSigner } from './signature.js';

export {
  AMBIGUOUS_SUBSCRIPTION,
  IGNORED_BILLING,
  subscriptionReport,
  UNBOUND_BILLING,
  UNKNOWN_WORKSPACE,
} from './billing.js';
export { merchantFrom } from './issuing.js';

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
/** How far ahead of our clock an event's `created` may be (Stripe's own signature tolerance). */
export const FUTURE_SKEW_S = 300;

export interface StripeAnswer {
  body: Record<string, unknown>;
  /** Response headers Stripe expects (the synchronous authorization answer's `stripe-version`). */
  headers: Record<string, string>;
}

/**
 * Stripe's verified events (the rules above). Writes through the cards (Issuing), the plans
 * (Billing) and hook-events (each event's answer, once), and records ignored billing events.
 */
export interface StripeEvents {
  /**
   * An event verified on the operator's billing endpoint (signed with a billing secret): routed
   * to the workspace it is bound to, then applied as on the workspace's route (same source, so
   * one event delivered to both endpoints is applied once). Issuing events: 403 forbidden.
   */
  handleBilling(event: StripeEvent): Promise<StripeAnswer>;
  /** An event verified on a workspace's own route; `signers` says whose secrets signed it. */
  handle(wid: string, signers: readonly StripeSigner[], event: StripeEvent): Promise<StripeAnswer>;
}

export interface StripeEventsDeps {
  cards: Cards;
  plans: Plans;
  hookEvents: HookEvents;
  ledger: Ledger;
  clock: Clock;
  workspaceExists: (wid: string) => Promise<boolean> | boolean;
}

export function createStripeEvents(deps: StripeEventsDeps): StripeEvents {
  const { cards, hookEvents, clock } = deps;
  const billing = createStripeBilling(deps);
  const versionOf = async (event: StripeEvent) => ({
    'stripe-version': event.api_version || (await defaultStripeVersion()),
  });
  const received = { received: true };

  return {
    async handleBilling(event) {
      notAhead(clock, event);
      if (ISSUING_EVENTS.has(event.type)) {
        throw new AppError('forbidden', {
          message: "Issuing events decide a workspace's cards: the operator's billing endpoint does not take them.",
          fix: "Send Issuing events to the workspace's own endpoint (/v1/hooks/stripe/{wid}), signed with its own signing secret; subscribe this endpoint to billing events only.",
        });
      }
      if (!BILLING_EVENTS.has(event.type)) return { body: received, headers: {} };
      const route = await billing.routeOf(event);
      if ('ignored' in route) return { body: { received: true, ignored: route.ignored }, headers: {} };
      return billing.apply(route.workspaceId, event);
    },

    async handle(wid, signers, event) {
      notAhead(clock, event);
      if (BILLING_EVENTS.has(event.type)) return billing.onWorkspaceRoute(wid, signers, event);
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
      if (event.type === 'issuing_authorization.request')
        return { body: await authorizationAnswer(cards, wid, event), headers: await versionOf(event) };
      if (event.type === 'issuing_transaction.created')
        return { body: await importTransaction(deps, wid, event), headers: {} };
      return { body: received, headers: {} };
    },
  };
}

/** 400 for an event (or a transaction) dated more than FUTURE_SKEW_S ahead of our clock. */
function notAhead(clock: Clock, event: StripeEvent): void {
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
}
