import { AppError } from '../errors/app-error.js';
import type { Gate } from '../gate/service.js';
import type { Ledger } from '../ledger/service.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { ActionRecord, CardRecord, ChargeRecord, Store } from '../store/index.js';

/**
 * The generic card issuer (issue 8, API.md 8); its settings and secret are in registry.ts.
 * Rules:
 * - A card maps to one agent, or to nothing. An authorization request for a card is an action of
 *   type `payment` at the gate, as the mapped agent, against its mandate (a stopped agent's is
 *   denied there); the issuer is answered at once: approved only on `allow` (a decision that waits
 *   for a person cannot meet the issuer's deadline, and is declined saying so). An unmapped card
 *   is declined.
 * - Posted charges are imported and reconciled: a charge matches an allowed payment of the
 *   card's agent with the same amount, currency and merchant, decided within MATCH_WINDOW_MS
 *   before the charge (and not matched by another charge). A charge with no match is flagged in
 *   the ledger. A mapping change reconciles the card's imported charges again.
 * - Each delivery is processed once, by its event id: a redelivery is answered as the first time
 *   and changes nothing.
 */
export const MATCH_WINDOW_MS = 7 * 86_400_000;

export interface IssuerEvent {
  id: string;
  type: 'authorization.request' | 'charge.posted' | 'charge.refunded';
  cardId: string;
  amount: number;
  currency: string;
  merchant: { name: string; domain?: string | null; mcc?: string | null };
  createdAt: string;
}

export function createIntegrations(deps: { store: Store; clock: Clock; ledger: Ledger; gate: Gate }) {
  const { store, clock, ledger, gate } = deps;
  const t = store.tables;

  const merchantOf = (m: IssuerEvent['merchant']) => (m.domain ?? m.name).toLowerCase();

  /** Whether an action is the payment a charge settles. */
  const matches = (action: ActionRecord, charge: ChargeRecord): boolean => {
    if (action.decision !== 'allow' || action.type !== 'payment' || !action.payment) return false;
    const at = Date.parse(action.createdAt);
    const chargedAt = Date.parse(charge.createdAt);
    return action.payment.amount === charge.amount && action.payment.currency === charge.currency
      && (action.payment.merchant ?? '').toLowerCase() === merchantOf(charge.merchant)
      && at <= chargedAt && chargedAt - at <= MATCH_WINDOW_MS;
  };

  /** Reconciles a card's posted charges (inside a write): each is matched to its own action, or flagged. */
  const reconcileInWrite = (wid: string, cardId: string, actor: string, only?: string): void => {
    const agentId = t.cards.get([wid, cardId])?.agentId ?? null;
    const charges = t.charges.scan([wid, cardId]).map((e) => e.value).filter((c) => c.kind === 'posted');
    const actions = agentId ? t.actions.scan([wid]).map((e) => e.value).filter((a) => a.agentId === agentId) : [];
    const taken = new Set<string>();
    for (const charge of charges.sort((a, b) => a.createdAt.localeCompare(b.createdAt))) {
      const action = actions.find((a) => !taken.has(a.id) && matches(a, charge));
      if (action) taken.add(action.id);
      const actionId = action?.id ?? null;
      if (only !== undefined && charge.eventId !== only && charge.actionId === actionId && charge.agentId === agentId) continue;
      t.charges.put([wid, cardId, charge.eventId], { ...charge, actionId, agentId });
      ledger.record({
        workspaceId: wid, actor, kind: actionId ? 'card.charge_matched' : 'card.charge_unmatched', subject: charge.eventId,
        data: { cardId, agentId, actionId, amount: charge.amount, currency: charge.currency, merchant: charge.merchant },
      });
    }
  };

  return {
    cards(wid: string): CardRecord[] {
      return t.cards.scan([wid]).map((e) => e.value);
    },

    charges(wid: string, cardId: string): ChargeRecord[] {
      return t.charges.scan([wid, cardId]).map((e) => e.value);
    },

    /** Maps a card to an agent (or unmaps it), then reconciles its imported charges again. */
    async mapCard(wid: string, cardId: string, agentId: string | null, actor: string): Promise<CardRecord> {
      return store.write(() => {
        if (agentId !== null) {
          const agent = t.agents.get([wid, agentId]);
          if (!agent || agent.removedAt) throw new AppError('not_found', { message: `No agent ${agentId} in this workspace.` });
        }
        const record: CardRecord = { cardId, workspaceId: wid, agentId, updatedAt: isoAt(clock.now()), updatedBy: actor };
        t.cards.put([wid, cardId], record);
        ledger.record({ workspaceId: wid, actor, kind: 'card.mapped', subject: cardId, data: { agentId } });
        reconcileInWrite(wid, cardId, actor);
        return record;
      });
    },

    /**
     * One verified delivery from the issuer. A redelivery of an event already processed gets
     * the first answer and changes nothing.
     */
    async handle(wid: string, event: IssuerEvent): Promise<Record<string, unknown>> {
      const seen = t.hookEvents.get([wid, 'issuer', event.id]);
      if (seen) return seen.answer;
      const actor = 'issuer';
      if (event.type === 'authorization.request') {
        const agentId = t.cards.get([wid, event.cardId])?.agentId ?? null;
        let answer: Record<string, unknown>;
        if (!agentId) {
          answer = { approved: false, actionId: null, reason: `Card ${event.cardId} is not mapped to an agent.` };
          await store.write(() => {
            ledger.record({ workspaceId: wid, actor, kind: 'card.authorization_declined', subject: event.id, data: { cardId: event.cardId, reason: 'unmapped card', amount: event.amount, currency: event.currency } });
          });
        } else {
          const { action } = await gate.authorize({ workspaceId: wid, agentId }, {
            type: 'payment',
            summary: `Card ${event.cardId} at ${event.merchant.name}`,
            payment: { amount: event.amount, currency: event.currency, merchant: merchantOf(event.merchant) },
            // The issuer's event id makes a redelivery the same action, even if the answer was lost.
            idempotencyKey: `issuer:${event.id}`,
            metadata: { cardId: event.cardId, issuerEvent: event.id, ...(event.merchant.mcc ? { mcc: event.merchant.mcc } : {}) },
          });
          const approved = action.decision === 'allow';
          const reason = approved ? 'allowed by the mandate'
            : action.decision === 'review' ? `needs a person's approval (${action.approvalId}); a card authorization cannot wait for one`
              : action.reason;
          answer = { approved, actionId: action.id, reason };
        }
        await store.write(() => { t.hookEvents.put([wid, 'issuer', event.id], { answer, at: isoAt(clock.now()) }); });
        return answer;
      }
      const answer = { received: true };
      await store.write(() => {
        if (t.hookEvents.has([wid, 'issuer', event.id])) return;
        const charge: ChargeRecord = {
          eventId: event.id, workspaceId: wid, cardId: event.cardId, kind: event.type === 'charge.posted' ? 'posted' : 'refunded',
          amount: event.amount, currency: event.currency,
          merchant: { name: event.merchant.name, domain: event.merchant.domain ?? null, mcc: event.merchant.mcc ?? null },
          createdAt: event.createdAt, importedAt: isoAt(clock.now()), actionId: null, agentId: t.cards.get([wid, event.cardId])?.agentId ?? null,
        };
        t.charges.put([wid, event.cardId, event.id], charge);
        if (charge.kind === 'posted') reconcileInWrite(wid, event.cardId, actor, event.id);
        else ledger.record({ workspaceId: wid, actor, kind: 'card.charge_refunded', subject: event.id, data: { cardId: event.cardId, amount: event.amount, currency: event.currency } });
        t.hookEvents.put([wid, 'issuer', event.id], { answer, at: isoAt(clock.now()) });
      });
      return answer;
    },
  };
}

export type Integrations = ReturnType<typeof createIntegrations>;
