import { isoAt } from '../../lib/clock.js';
import type { CardMerchant, Cards } from '../cards.js';
import type { HookAnswer, HookEvents } from '../hook-events.js';
import { ACTOR } from './events.js';
import {
  refId,
  type StripeAuthorization,
  type StripeEvent,
  type StripeMerchantData,
  type StripeTransaction,
} from './schemas.js';

/**
 * Stripe Issuing's events (service.ts lists the rules), read into the cards' common shapes
 * (cards.ts): an authorization request decided at the gate and answered in Stripe's synchronous
 * shape; a transaction imported as a posted charge or a refund, its amount kept positive.
 */

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

/** `issuing_authorization.request`: the card's agent decides at the gate; the answer is Stripe's `{ approved, metadata }`. */
export function authorizationAnswer(cards: Cards, wid: string, event: StripeEvent): Promise<HookAnswer> {
  const auth = event.data.object as unknown as StripeAuthorization;
  const requested = auth.pending_request ?? { amount: auth.amount, currency: auth.currency };
  return cards.authorize(
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
}

/**
 * Stripe's sign: a `capture` takes money (negative amount) and is a posted charge; a `refund`
 * gives it back (positive) and is a refund. Other types are no charge (null).
 */
function chargeKind(tx: StripeTransaction): 'posted' | 'refunded' | null {
  if (tx.type === 'capture') return tx.amount < 0 ? 'posted' : 'refunded';
  if (tx.type === 'refund') return tx.amount > 0 ? 'refunded' : 'posted';
  return null;
}

/** `issuing_transaction.created`: imported once as the card's charge, keyed by the transaction id; zero amounts change nothing. */
export function importTransaction(
  deps: { cards: Cards; hookEvents: HookEvents },
  wid: string,
  event: StripeEvent,
): Promise<HookAnswer> {
  const tx = event.data.object as unknown as StripeTransaction;
  const kind = chargeKind(tx);
  return deps.hookEvents.processOnce(wid, ACTOR, event.id, async () => {
    if (kind !== null && tx.amount !== 0) {
      await deps.cards.importInWrite(wid, 'stripe', {
        eventId: tx.id,
        cardId: refId(tx.card)!,
        kind,
        amount: Math.abs(tx.amount),
        currency: tx.currency.toUpperCase(),
        merchant: merchantFrom(tx.merchant_data),
        createdAt: isoAt(tx.created * 1000),
      });
    }
    return { received: true };
  });
}
