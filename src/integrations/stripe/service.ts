import Stripe from 'stripe';
import { isoAt } from '../../lib/clock.js';
import type { Plans, SubscriptionReport } from '../../plans/service.js';
import type { Store } from '../../store/index.js';
import type { CardMerchant, Cards } from '../cards.js';
import { refId, type StripeAuthorization, type StripeEvent, type StripeInvoice, type StripeMerchantData, type StripeSubscription, type StripeTransaction } from './schemas.js';

/**
 * The payment provider's events (Stripe Issuing and Billing), verified before they come here
 * (signature.ts). Rules:
 * - `issuing_authorization.request`: decided at the gate as the card's agent (cards.ts). Answered
 *   in Stripe's synchronous shape, `{ approved, metadata: { svc_action_id?, svc_reason } }`
 *   with the `Stripe-Version` header Stripe requires (the event's own `api_version`, else the
 *   version of the stripe package). Amount from `pending_request.amount` (else `amount`),
 *   currency upper-cased, merchant from `merchant_data` (the host of `url` when there is one, else
 *   the name; `category_code` as the MCC).
 * - `issuing_transaction.created`: imported and reconciled as the card's charge, keyed by the
 *   transaction id. Stripe's sign: a `capture` takes money (negative amount) and is a posted
 *   charge; a `refund` gives it back (positive) and is a refund; amounts are kept positive.
 *   Zero amounts and other transaction types are received and change nothing.
 * - `customer.subscription.created|updated|deleted`: the workspace's plan (plans/service.ts).
 *   Plan name: the first item's price `lookup_key`, else the subscription's `metadata.plan`, else
 *   `paid`. `invoice.payment_failed`: noted on the current subscription's record.
 * - Each event id once: a redelivery gets the first answer and changes nothing. Event types not
 *   listed are received (`{ received: true }`) and change nothing.
 */
export const DEFAULT_STRIPE_VERSION: string = Stripe.API_VERSION;
const ACTOR = 'stripe';
const SUBSCRIPTION_EVENTS = new Set(['customer.subscription.created', 'customer.subscription.updated', 'customer.subscription.deleted']);

export interface StripeAnswer {
  body: Record<string, unknown>;
  /** Response headers Stripe expects (the synchronous authorization answer's `stripe-version`). */
  headers: Record<string, string>;
}

const secondsToIso = (s: number | null | undefined): string | null => (typeof s === 'number' ? isoAt(s * 1000) : null);

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
    eventId: event.id, eventCreated: event.created, plan, status: sub.status, subscriptionId: sub.id, customerId: refId(sub.customer),
    // Newer API versions keep the period on the item; older ones on the subscription.
    currentPeriodEnd: secondsToIso(item?.current_period_end ?? sub.current_period_end),
    ended: event.type === 'customer.subscription.deleted',
  };
}

export function createStripeEvents(deps: { store: Store; cards: Cards; plans: Plans }) {
  const { store, cards, plans } = deps;
  const versionOf = (event: StripeEvent) => ({ 'stripe-version': event.api_version || DEFAULT_STRIPE_VERSION });

  /** Remembers `answer` under the event, with `change` applied in the same write (once). */
  const once = async (wid: string, event: StripeEvent, answer: Record<string, unknown>, change: () => void = () => {}): Promise<Record<string, unknown>> =>
    store.write(() => {
      const first = cards.answered(wid, ACTOR, event.id);
      if (first) return first;
      change();
      cards.remember(wid, ACTOR, event.id, answer);
      return answer;
    });

  return {
    async handle(wid: string, event: StripeEvent): Promise<StripeAnswer> {
      const seen = cards.answered(wid, ACTOR, event.id);
      if (seen) return { body: seen, headers: event.type === 'issuing_authorization.request' ? versionOf(event) : {} };
      const received = { received: true };

      if (event.type === 'issuing_authorization.request') {
        const auth = event.data.object as unknown as StripeAuthorization;
        const requested = auth.pending_request ?? { amount: auth.amount, currency: auth.currency };
        const decision = await cards.authorize(wid, 'stripe', {
          eventId: event.id, cardId: refId(auth.card)!, amount: requested.amount, currency: requested.currency.toUpperCase(), merchant: merchantFrom(auth.merchant_data),
        });
        // Stripe keeps metadata values up to 500 characters.
        const metadata = { ...(decision.actionId ? { svc_action_id: decision.actionId } : {}), svc_reason: decision.reason.slice(0, 500) };
        const body = await once(wid, event, { approved: decision.approved, metadata });
        return { body, headers: versionOf(event) };
      }

      if (event.type === 'issuing_transaction.created') {
        const tx = event.data.object as unknown as StripeTransaction;
        const kind = tx.type === 'capture' ? (tx.amount < 0 ? 'posted' : 'refunded') : tx.type === 'refund' ? (tx.amount > 0 ? 'refunded' : 'posted') : null;
        if (kind === null || tx.amount === 0) return { body: await once(wid, event, received), headers: {} };
        const answer = await store.write(() => {
          const first = cards.answered(wid, ACTOR, event.id);
          if (first) return first;
          cards.importInWrite(wid, 'stripe', event.id, {
            eventId: tx.id, cardId: refId(tx.card)!, kind, amount: Math.abs(tx.amount), currency: tx.currency.toUpperCase(),
            merchant: merchantFrom(tx.merchant_data), createdAt: isoAt(tx.created * 1000),
          }, received);
          return received;
        });
        return { body: answer, headers: {} };
      }

      if (SUBSCRIPTION_EVENTS.has(event.type)) {
        const report = subscriptionReport(event, event.data.object as unknown as StripeSubscription);
        return { body: await once(wid, event, received, () => { plans.applyInWrite(wid, report, ACTOR); }), headers: {} };
      }

      if (event.type === 'invoice.payment_failed') {
        const invoice = event.data.object as unknown as StripeInvoice;
        const subscriptionId = refId(invoice.subscription) ?? refId(invoice.parent?.subscription_details?.subscription);
        return { body: await once(wid, event, received, () => { plans.paymentFailedInWrite(wid, subscriptionId, event.id, ACTOR); }), headers: {} };
      }

      return { body: received, headers: {} };
    },
  };
}

export type StripeEvents = ReturnType<typeof createStripeEvents>;
