import type { Cards } from './cards.js';
import type { HookEvents } from './hook-events.js';

/**
 * The generic card issuer (issue 8, docs/integrations.md); its settings and secret are in registry.ts, and
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

/** The generic card issuer's deliveries (the rules above): through the cards and hook-events, which own what they write. */
export interface Integrations {
  /**
   * One verified delivery from the issuer: an authorization request answered
   * `{ approved, actionId, reason }`, a charge imported (`{ received: true }`). A redelivery of
   * an event already processed gets the first answer and changes nothing (hook-events.ts).
   */
  handle(wid: string, event: IssuerEvent): Promise<Record<string, unknown>>;
}

export function createIntegrations(deps: { cards: Cards; hookEvents: HookEvents }): Integrations {
  const { cards, hookEvents } = deps;

  return {
    async handle(wid: string, event: IssuerEvent): Promise<Record<string, unknown>> {
      const seen = await hookEvents.answered(wid, 'issuer', event.id);
      if (seen) return seen;
      if (event.type === 'authorization.request') {
        return cards.authorize(
          wid,
          'issuer',
          {
            eventId: event.id,
            cardId: event.cardId,
            amount: event.amount,
            currency: event.currency,
            merchant: event.merchant,
          },
          (decision) => ({ ...decision }),
        );
      }
      return hookEvents.processOnce(wid, 'issuer', event.id, async () => {
        await cards.importInWrite(wid, 'issuer', {
          eventId: event.id,
          cardId: event.cardId,
          kind: event.type === 'charge.posted' ? 'posted' : 'refunded',
          amount: event.amount,
          currency: event.currency,
          merchant: event.merchant,
          createdAt: event.createdAt,
        });
        return { received: true };
      });
    },
  };
}
