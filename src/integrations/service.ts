import type { Store } from '../store/index.js';
import type { Cards } from './cards.js';

/**
 * The generic card issuer (issue 8, API.md 8); its settings and secret are in registry.ts, and
 * what it shares with Stripe Issuing (mapping, authorization, reconciliation) in cards.ts.
 * Rules:
 * - `authorization.request` is answered `{ approved, actionId, reason }`; other events
 *   `{ received: true }`.
 * - Each delivery is processed once, by its event id: a redelivery is answered as the first time
 *   and changes nothing.
 */
export { MATCH_WINDOW_MS } from './cards.js';

export interface IssuerEvent {
  id: string;
  type: 'authorization.request' | 'charge.posted' | 'charge.refunded';
  cardId: string;
  amount: number;
  currency: string;
  merchant: { name: string; domain?: string | null; mcc?: string | null };
  createdAt: string;
}

export function createIntegrations(deps: { store: Store; cards: Cards }) {
  const { store, cards } = deps;

  return {
    /**
     * One verified delivery from the issuer. A redelivery of an event already processed gets
     * the first answer and changes nothing.
     */
    async handle(wid: string, event: IssuerEvent): Promise<Record<string, unknown>> {
      const seen = cards.answered(wid, 'issuer', event.id);
      if (seen) return seen;
      if (event.type === 'authorization.request') {
        const answer = { ...await cards.authorize(wid, 'issuer', { eventId: event.id, cardId: event.cardId, amount: event.amount, currency: event.currency, merchant: event.merchant }) };
        await store.write(() => { cards.remember(wid, 'issuer', event.id, answer); });
        return answer;
      }
      const answer = { received: true };
      await store.write(() => {
        cards.importInWrite(wid, 'issuer', event.id, {
          eventId: event.id, cardId: event.cardId, kind: event.type === 'charge.posted' ? 'posted' : 'refunded',
          amount: event.amount, currency: event.currency, merchant: event.merchant, createdAt: event.createdAt,
        }, answer);
      });
      return answer;
    },
  };
}

export type Integrations = ReturnType<typeof createIntegrations>;
