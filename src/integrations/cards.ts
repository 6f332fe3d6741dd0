import { AppError } from '../errors/app-error.js';
import type { Gate } from '../gate/service.js';
import type { Ledger } from '../ledger/service.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { ActionRecord, CardProvider, CardRecord, ChargeRecord, Store } from '../store/index.js';

/**
 * Cards of every provider (the generic issuer, Stripe Issuing): mapping, authorization at the gate,
 * charge import and reconciliation. The providers' own event shapes are read in service.ts
 * (issuer) and stripe.ts; both come here with the same plain shapes.
 * Rules:
 * - Everything is kept per provider: a card `card_x` of the issuer and one of Stripe are two cards.
 * - A card maps to one agent, or to nothing. An authorization request for a card is an action of
 *   type `payment` at the gate, as the mapped agent, against its mandate (a stopped agent's is
 *   denied there); the provider is answered at once: approved only on `allow` (a decision that
 *   waits for a person cannot meet the provider's deadline, and is declined saying so). An
 *   unmapped card is declined, and the decline is recorded in the ledger.
 * - Posted charges are imported and reconciled: a charge matches an allowed payment of the
 *   card's agent with the same amount, currency and merchant, decided within MATCH_WINDOW_MS
 *   before the charge, compared to the second (and not matched by another charge). A charge with no match is flagged in
 *   the ledger (`card.charge_unmatched`, also an outbound webhook event). A mapping change
 *   reconciles the card's imported charges again.
 * - Each provider event is processed once, by its id (`hookEvents`, [wid, provider, id]): a
 *   redelivery is answered as the first time and changes nothing.
 */
export const MATCH_WINDOW_MS = 7 * 86_400_000;

export interface CardMerchant { name: string; domain?: string | null; mcc?: string | null }

/** An authorization request, in the providers' common shape. */
export interface CardAuthorization {
  /** The provider's event id: a redelivery is the same action at the gate. */
  eventId: string;
  cardId: string;
  amount: number;
  currency: string;
  merchant: CardMerchant;
}

/** A posted or refunded charge, in the providers' common shape. */
export interface CardCharge {
  eventId: string;
  cardId: string;
  kind: 'posted' | 'refunded';
  amount: number;
  currency: string;
  merchant: CardMerchant;
  createdAt: string;
}

export interface CardDecision { approved: boolean; actionId: string | null; reason: string }

/** What a mandate's `merchants` name: the merchant's domain when known, else its name (lower case). */
export const merchantOf = (m: CardMerchant): string => (m.domain ?? m.name).toLowerCase();

export function createCards(deps: { store: Store; clock: Clock; ledger: Ledger; gate: Gate }) {
  const { store, clock, ledger, gate } = deps;
  const t = store.tables;

  /** Whether an action is the payment a charge settles. */
  const matches = (action: ActionRecord, charge: ChargeRecord): boolean => {
    if (action.decision !== 'allow' || action.type !== 'payment' || !action.payment) return false;
    // Providers time charges in whole seconds (Stripe's `created`): compared at that grain, so a
    // payment decided within the charge's second still counts as before it.
    const at = Math.floor(Date.parse(action.createdAt) / 1000) * 1000;
    const chargedAt = Date.parse(charge.createdAt);
    return action.payment.amount === charge.amount && action.payment.currency === charge.currency
      && (action.payment.merchant ?? '').toLowerCase() === merchantOf(charge.merchant)
      && at <= chargedAt && chargedAt - at <= MATCH_WINDOW_MS;
  };

  /** Reconciles a card's posted charges (inside a write): each is matched to its own action, or flagged. */
  const reconcileInWrite = (wid: string, provider: CardProvider, cardId: string, actor: string, only?: string): void => {
    const agentId = t.cards.get([wid, provider, cardId])?.agentId ?? null;
    const charges = t.charges.scan([wid, provider, cardId]).map((e) => e.value).filter((c) => c.kind === 'posted');
    const actions = agentId ? t.actions.scan([wid]).map((e) => e.value).filter((a) => a.agentId === agentId) : [];
    const taken = new Set<string>();
    for (const charge of charges.sort((a, b) => a.createdAt.localeCompare(b.createdAt))) {
      const action = actions.find((a) => !taken.has(a.id) && matches(a, charge));
      if (action) taken.add(action.id);
      const actionId = action?.id ?? null;
      if (only !== undefined && charge.eventId !== only && charge.actionId === actionId && charge.agentId === agentId) continue;
      t.charges.put([wid, provider, cardId, charge.eventId], { ...charge, actionId, agentId });
      ledger.record({
        workspaceId: wid, actor, kind: actionId ? 'card.charge_matched' : 'card.charge_unmatched', subject: charge.eventId,
        data: { provider, cardId, agentId, actionId, amount: charge.amount, currency: charge.currency, merchant: charge.merchant },
      });
    }
  };

  return {
    cards(wid: string, provider: CardProvider): CardRecord[] {
      return t.cards.scan([wid, provider]).map((e) => e.value);
    },

    charges(wid: string, provider: CardProvider, cardId: string): ChargeRecord[] {
      return t.charges.scan([wid, provider, cardId]).map((e) => e.value);
    },

    /** Maps a card to an agent (or unmaps it), then reconciles its imported charges again. */
    async mapCard(wid: string, provider: CardProvider, cardId: string, agentId: string | null, actor: string): Promise<{ cardId: string; agentId: string | null }> {
      return store.write(() => {
        if (agentId !== null) {
          const agent = t.agents.get([wid, agentId]);
          if (!agent || agent.removedAt) throw new AppError('not_found', { message: `No agent ${agentId} in this workspace.` });
        }
        const record: CardRecord = { provider, cardId, workspaceId: wid, agentId, updatedAt: isoAt(clock.now()), updatedBy: actor };
        t.cards.put([wid, provider, cardId], record);
        ledger.record({ workspaceId: wid, actor, kind: 'card.mapped', subject: cardId, data: { provider, agentId } });
        reconcileInWrite(wid, provider, cardId, actor);
        return { cardId, agentId };
      });
    },

    /** The first answer given to a provider event, if it was processed. */
    answered(wid: string, provider: string, eventId: string): Record<string, unknown> | undefined {
      return t.hookEvents.get([wid, provider, eventId])?.answer;
    },

    /** Inside a write: marks a provider event processed with its answer. */
    remember(wid: string, provider: string, eventId: string, answer: Record<string, unknown>): void {
      t.hookEvents.put([wid, provider, eventId], { answer, at: isoAt(clock.now()) });
    },

    /**
     * An authorization request: decided at the gate as the card's agent; an unmapped card is
     * declined. Not remembered here: the caller remembers the answer under its event id.
     */
    async authorize(wid: string, provider: CardProvider, auth: CardAuthorization): Promise<CardDecision> {
      const agentId = t.cards.get([wid, provider, auth.cardId])?.agentId ?? null;
      if (!agentId) {
        const decision = { approved: false, actionId: null, reason: `Card ${auth.cardId} is not mapped to an agent.` };
        await store.write(() => {
          ledger.record({ workspaceId: wid, actor: provider, kind: 'card.authorization_declined', subject: auth.eventId, data: { provider, cardId: auth.cardId, reason: 'unmapped card', amount: auth.amount, currency: auth.currency } });
        });
        return decision;
      }
      const { action } = await gate.authorize({ workspaceId: wid, agentId }, {
        type: 'payment',
        summary: `Card ${auth.cardId} at ${auth.merchant.name}`,
        payment: { amount: auth.amount, currency: auth.currency, merchant: merchantOf(auth.merchant) },
        // The provider's event id makes a redelivery the same action, even if the answer was lost.
        idempotencyKey: `${provider}:${auth.eventId}`,
        metadata: { cardId: auth.cardId, [`${provider}Event`]: auth.eventId, ...(auth.merchant.mcc ? { mcc: auth.merchant.mcc } : {}) },
      });
      const approved = action.decision === 'allow';
      const reason = approved ? 'allowed by the mandate'
        : action.decision === 'review' ? `needs a person's approval (${action.approvalId}); a card authorization cannot wait for one`
          : action.reason;
      return { approved, actionId: action.id, reason };
    },

    /**
     * Inside a write: processes the provider event `hookEventId` carrying a charge, once (false
     * when that event was already processed). A charge already imported under its id (another
     * event about the same charge) is kept as it is; a new one is stored, and reconciled when
     * posted or recorded as a refund.
     */
    importInWrite(wid: string, provider: CardProvider, hookEventId: string, charge: CardCharge, answer: Record<string, unknown>): boolean {
      if (t.hookEvents.has([wid, provider, hookEventId])) return false;
      if (!t.charges.has([wid, provider, charge.cardId, charge.eventId])) {
        const record: ChargeRecord = {
          provider, eventId: charge.eventId, workspaceId: wid, cardId: charge.cardId, kind: charge.kind,
          amount: charge.amount, currency: charge.currency,
          merchant: { name: charge.merchant.name, domain: charge.merchant.domain ?? null, mcc: charge.merchant.mcc ?? null },
          createdAt: charge.createdAt, importedAt: isoAt(clock.now()), actionId: null, agentId: t.cards.get([wid, provider, charge.cardId])?.agentId ?? null,
        };
        t.charges.put([wid, provider, charge.cardId, charge.eventId], record);
        if (record.kind === 'posted') reconcileInWrite(wid, provider, charge.cardId, provider, charge.eventId);
        else ledger.record({ workspaceId: wid, actor: provider, kind: 'card.charge_refunded', subject: charge.eventId, data: { provider, cardId: charge.cardId, amount: charge.amount, currency: charge.currency } });
      }
      t.hookEvents.put([wid, provider, hookEventId], { answer, at: isoAt(clock.now()) });
      return true;
    },
  };
}

export type Cards = ReturnType<typeof createCards>;
