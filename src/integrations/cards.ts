import { AppError } from '../errors/app-error.js';
import type { Gate } from '../gate/service.js';
import type { Ledger } from '../ledger/service.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { Store } from '../store/index.js';
import type { ActionRecord } from '../gate/records.js';
import type { CardProvider, CardRecord, ChargeRecord } from './records.js';
import type { HookAnswer, HookEvents } from './hook-events.js';
import { integrationsRepo } from './repo.js';

/**
 * Cards of every provider (the generic issuer, Stripe Issuing): mapping, authorization at the gate,
 * charge import and reconciliation. The providers' own event shapes are read in service.ts
 * (issuer) and stripe.ts; both come here with the same plain shapes.
 * Rules:
 * - Everything is kept per provider: a card `card_x` of the issuer and one of Stripe are two cards.
 * - A card maps to one agent, or to nothing. An authorization request for a card is an action of
 *   type `payment` at the gate, as the mapped agent, against its mandate (a stopped agent's is
 *   denied there); the provider is answered at once: approved only on `allow`. A rule that would
 *   wait for a person cannot meet the provider's deadline: the gate denies it then (`cannotWait`)
 *   and opens no approval. An unmapped card is declined, and the decline is recorded.
 * - Posted charges are imported and reconciled: a charge matches an allowed payment of the
 *   card's agent that was authorized through this very card (`cardActions`, written by
 *   `authorize` with its answer; the action's `metadata.cardId` and `cardProvider` say the same
 *   for people, but an agent can write any metadata itself), with the same amount, currency and
 *   merchant, decided within MATCH_WINDOW_MS before the charge, compared to the second. A
 *   payment the agent made any other way, or through another card, never settles a charge. An
 *   action settles at most one charge, across every card of the workspace. A charge with no match
 *   is flagged in the ledger (`card.charge_unmatched`, also an outbound webhook event).
 * - A mapping change reconciles the card's imported charges again; only a charge whose match
 *   changed is recorded again (the others keep their record, with the new agent noted).
 * - Each provider event is processed once, by its id (hook-events.ts): a redelivery is answered as
 *   the first time and changes nothing; the decline of an unmapped card and an imported charge
 *   are written in the same write as the stored answer.
 */
export const MATCH_WINDOW_MS = 7 * 86_400_000;

export interface CardMerchant {
  name: string;
  domain?: string | null;
  mcc?: string | null;
}

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

export interface CardDecision {
  approved: boolean;
  actionId: string | null;
  reason: string;
}

/** What a mandate's `merchants` name: the merchant's domain when known, else its name (lower case). */
export const merchantOf = (m: CardMerchant): string => (m.domain ?? m.name).toLowerCase();

export function createCards(deps: { store: Store; clock: Clock; ledger: Ledger; gate: Gate; hookEvents: HookEvents }) {
  const { store, clock, ledger, gate, hookEvents } = deps;
  const repo = integrationsRepo(store);

  /** Whether an action is the payment a charge settles: authorized through the charge's own card. */
  const matches = async (action: ActionRecord, charge: ChargeRecord): Promise<boolean> => {
    if (action.decision !== 'allow' || action.type !== 'payment' || !action.payment) return false;
    // Metadata is what an agent may write itself on any action: the card path's own record decides.
    const through = await repo.cardAction(action.workspaceId, action.id);
    if (!through || through.cardId !== charge.cardId || through.provider !== charge.provider) return false;
    // Providers time charges in whole seconds (Stripe's `created`): compared at that grain, so a
    // payment decided within the charge's second still counts as before it.
    const at = Math.floor(Date.parse(action.createdAt) / 1000) * 1000;
    const chargedAt = Date.parse(charge.createdAt);
    return (
      action.payment.amount === charge.amount &&
      action.payment.currency === charge.currency &&
      (action.payment.merchant ?? '').toLowerCase() === merchantOf(charge.merchant) &&
      at <= chargedAt &&
      chargedAt - at <= MATCH_WINDOW_MS
    );
  };

  /**
   * Reconciles a card's posted charges (inside a write): each is matched to its own action, or
   * flagged. `fresh`: the charge just imported, always recorded; any other is recorded again only
   * when its match changed.
   */
  const reconcileInWrite = async (
    wid: string,
    provider: CardProvider,
    cardId: string,
    actor: string,
    fresh?: string,
  ): Promise<void> => {
    const [card, all] = await Promise.all([repo.card(wid, provider, cardId), repo.charges(wid)]);
    const agentId = card?.agentId ?? null;
    const charges = all.filter((c) => c.provider === provider && c.cardId === cardId && c.kind === 'posted');
    const actions = agentId ? await repo.actionsOf(wid, agentId) : [];
    // Actions settled by the charges of every other card of the workspace are not this card's to take.
    const taken = new Set<string>();
    for (const c of all) {
      if (c.actionId !== null && !(c.provider === provider && c.cardId === cardId)) taken.add(c.actionId);
    }
    for (const charge of charges.sort(
      (a, b) => a.createdAt.localeCompare(b.createdAt) || a.eventId.localeCompare(b.eventId),
    )) {
      let action: ActionRecord | undefined;
      for (const a of actions) {
        if (!taken.has(a.id) && (await matches(a, charge))) {
          action = a;
          break;
        }
      }
      if (action) taken.add(action.id);
      const actionId = action?.id ?? null;
      if (charge.actionId === actionId && charge.agentId === agentId && charge.eventId !== fresh) continue;
      await repo.putCharge({ ...charge, actionId, agentId });
      if (charge.actionId === actionId && charge.eventId !== fresh) continue;
      await ledger.record({
        workspaceId: wid,
        actor,
        kind: actionId ? 'card.charge_matched' : 'card.charge_unmatched',
        subject: charge.eventId,
        data: {
          provider,
          cardId,
          agentId,
          actionId,
          amount: charge.amount,
          currency: charge.currency,
          merchant: charge.merchant,
        },
      });
    }
  };

  return {
    cards(wid: string, provider: CardProvider): Promise<CardRecord[]> {
      return repo.cards(wid, provider);
    },

    charges(wid: string, provider: CardProvider, cardId: string): Promise<ChargeRecord[]> {
      return repo.charges(wid, provider, cardId);
    },

    /** Maps a card to an agent (or unmaps it), then reconciles its imported charges again. */
    async mapCard(
      wid: string,
      provider: CardProvider,
      cardId: string,
      agentId: string | null,
      actor: string,
    ): Promise<{ cardId: string; agentId: string | null }> {
      return store.write(async () => {
        if (agentId !== null) {
          const agent = await repo.agent(wid, agentId);
          if (!agent || agent.removedAt)
            throw new AppError('not_found', { message: `No agent ${agentId} in this workspace.` });
        }
        const record: CardRecord = {
          provider,
          cardId,
          workspaceId: wid,
          agentId,
          updatedAt: isoAt(clock.now()),
          updatedBy: actor,
        };
        await repo.putCard(record);
        await ledger.record({
          workspaceId: wid,
          actor,
          kind: 'card.mapped',
          subject: cardId,
          data: { provider, agentId },
        });
        await reconcileInWrite(wid, provider, cardId, actor);
        return { cardId, agentId };
      });
    },

    /**
     * An authorization request, answered once per provider event (hook-events.ts): decided at the
     * gate as the card's agent (the event id as idempotency key makes a repeat the same action),
     * the answer `answerOf(decision)` stored in the same write. An unmapped card is declined, its
     * ledger record written in the same write as the stored answer. A repeat gets the first answer.
     */
    async authorize(
      wid: string,
      provider: CardProvider,
      auth: CardAuthorization,
      answerOf: (decision: CardDecision) => HookAnswer,
    ): Promise<HookAnswer> {
      const agentId = (await repo.card(wid, provider, auth.cardId))?.agentId ?? null;
      if (!agentId) {
        const decision = { approved: false, actionId: null, reason: `Card ${auth.cardId} is not mapped to an agent.` };
        return hookEvents.processOnce(wid, provider, auth.eventId, async () => {
          await ledger.record({
            workspaceId: wid,
            actor: provider,
            kind: 'card.authorization_declined',
            subject: auth.eventId,
            data: {
              provider,
              cardId: auth.cardId,
              reason: 'unmapped card',
              amount: auth.amount,
              currency: auth.currency,
            },
          });
          return answerOf(decision);
        });
      }
      // The answer (and this card's claim on the action) is stored in the decision's own write:
      // one flush on the card network's deadline path, and no decision without its answer.
      let answer: HookAnswer | undefined;
      await gate.authorize(
        { workspaceId: wid, agentId },
        {
          type: 'payment',
          summary: `Card ${auth.cardId} at ${auth.merchant.name}`,
          payment: { amount: auth.amount, currency: auth.currency, merchant: merchantOf(auth.merchant) },
          // The provider's event id makes a redelivery the same action, even if the answer was lost.
          idempotencyKey: `${provider}:${auth.eventId}`,
          // The card and its provider: only this card's charges may settle this payment.
          metadata: {
            cardId: auth.cardId,
            cardProvider: provider,
            [`${provider}Event`]: auth.eventId,
            ...(auth.merchant.mcc ? { mcc: auth.merchant.mcc } : {}),
          },
        },
        {
          // The card network waits a second or two: a rule that needs a person declines at once.
          cannotWait: true,
          inWrite: async (action) => {
            answer = await hookEvents.onceInWrite(wid, provider, auth.eventId, async () => {
              await repo.putCardAction(wid, action.id, { provider, cardId: auth.cardId, eventId: auth.eventId });
              const approved = action.decision === 'allow';
              return answerOf({
                approved,
                actionId: action.id,
                reason: approved ? 'allowed by the mandate' : action.reason,
              });
            });
          },
        },
      );
      return answer!;
    },

    /**
     * Inside a write (the event's `processOnce`): a charge already imported under its id (another
     * event about the same charge) is kept as it is; a new one is stored, and reconciled when
     * posted or recorded as a refund.
     */
    async importInWrite(wid: string, provider: CardProvider, charge: CardCharge): Promise<void> {
      if (await repo.hasCharge(wid, provider, charge.cardId, charge.eventId)) return;
      const record: ChargeRecord = {
        provider,
        eventId: charge.eventId,
        workspaceId: wid,
        cardId: charge.cardId,
        kind: charge.kind,
        amount: charge.amount,
        currency: charge.currency,
        merchant: {
          name: charge.merchant.name,
          domain: charge.merchant.domain ?? null,
          mcc: charge.merchant.mcc ?? null,
        },
        createdAt: charge.createdAt,
        importedAt: isoAt(clock.now()),
        actionId: null,
        agentId: (await repo.card(wid, provider, charge.cardId))?.agentId ?? null,
      };
      await repo.putCharge(record);
      if (record.kind === 'posted') await reconcileInWrite(wid, provider, charge.cardId, provider, charge.eventId);
      else
        await ledger.record({
          workspaceId: wid,
          actor: provider,
          kind: 'card.charge_refunded',
          subject: charge.eventId,
          data: { provider, cardId: charge.cardId, amount: charge.amount, currency: charge.currency },
        });
    },
  };
}

export type Cards = ReturnType<typeof createCards>;
