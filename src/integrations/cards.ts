import { AppError } from '../errors/app-error.js';
import type { Gate } from '../gate/service.js';
import type { Ledger } from '../ledger/service.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { Store } from '../store/index.js';
import { authorizeCard } from './card-authorize.js';
import { reconcileInWrite, type CardMerchant } from './card-match.js';
import type { CardProvider, CardRecord, ChargeRecord } from './records.js';
import type { HookAnswer, HookEvents } from './hook-events.js';
import { integrationsRepo } from './repo.js';

export { MATCH_WINDOW_MS, merchantOf, type CardMerchant } from './card-match.js';

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

/**
 * Cards of every provider (the rules above). Reads and writes the `cards`, `charges` and
 * `cardActions` tables, reads agents and their actions, decides authorizations at the gate, and
 * writes ledger records (`card.mapped`, `card.authorization_declined`, `card.charge_*`).
 */
export interface Cards {
  /** A provider's cards of the workspace and the agent each maps to. */
  cards(wid: string, provider: CardProvider): Promise<CardRecord[]>;
  /** A card's imported charges and how each was reconciled. */
  charges(wid: string, provider: CardProvider, cardId: string): Promise<ChargeRecord[]>;
  /** Maps a card to an agent (or unmaps it), then reconciles its imported charges again, in one write. */
  mapCard(
    wid: string,
    provider: CardProvider,
    cardId: string,
    agentId: string | null,
    actor: string,
  ): Promise<{ cardId: string; agentId: string | null }>;
  /**
   * An authorization request, answered once per provider event (hook-events.ts): decided at the
   * gate as the card's agent (the event id as idempotency key makes a repeat the same action),
   * the answer `answerOf(decision)` stored in the same write. An unmapped card is declined, its
   * ledger record written in the same write as the stored answer. A repeat gets the first answer.
   */
  authorize(
    wid: string,
    provider: CardProvider,
    auth: CardAuthorization,
    answerOf: (decision: CardDecision) => HookAnswer,
  ): Promise<HookAnswer>;
  /**
   * Inside a write (the event's `processOnce`): a charge already imported under its id (another
   * event about the same charge) is kept as it is; a new one is stored, and reconciled when
   * posted or recorded as a refund.
   */
  importInWrite(wid: string, provider: CardProvider, charge: CardCharge): Promise<void>;
}

export interface CardsDeps {
  store: Store;
  clock: Clock;
  ledger: Ledger;
  gate: Gate;
  hookEvents: HookEvents;
}

export function createCards(deps: CardsDeps): Cards {
  const { store, clock, ledger, gate, hookEvents } = deps;
  const repo = integrationsRepo(store);

  return {
    cards(wid: string, provider: CardProvider): Promise<CardRecord[]> {
      return repo.cards(wid, provider);
    },

    charges(wid: string, provider: CardProvider, cardId: string): Promise<ChargeRecord[]> {
      return repo.charges(wid, provider, cardId);
    },

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
        await reconcileInWrite({ ledger, repo }, wid, provider, cardId, actor);
        return { cardId, agentId };
      });
    },

    authorize: (wid, provider, auth, answerOf) =>
      authorizeCard({ ledger, gate, hookEvents, repo }, wid, provider, auth, answerOf),

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
      if (record.kind === 'posted')
        await reconcileInWrite({ ledger, repo }, wid, provider, charge.cardId, provider, charge.eventId);
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
