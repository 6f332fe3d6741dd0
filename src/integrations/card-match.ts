import type { ActionRecord } from '../gate/records.js';
import type { Ledger } from '../ledger/service.js';
import type { CardProvider, ChargeRecord } from './records.js';
import type { IntegrationsRepo } from './repo.js';

/**
 * Reconciling a card's posted charges (cards.ts lists the rules): each charge is matched to the
 * allowed payment of the card's agent that was authorized through this very card, with the same
 * amount, currency and merchant, decided within MATCH_WINDOW_MS before it; an action settles at
 * most one charge across the workspace's cards; a charge with no match is flagged.
 */
export const MATCH_WINDOW_MS = 7 * 86_400_000;

export interface CardMerchant {
  name: string;
  domain?: string | null;
  mcc?: string | null;
}

/** What a mandate's `merchants` name: the merchant's domain when known, else its name (lower case). */
export const merchantOf = (m: CardMerchant): string => (m.domain ?? m.name).toLowerCase();

export interface ReconcileDeps {
  ledger: Ledger;
  repo: IntegrationsRepo;
}

/** Whether an action is the payment a charge settles: authorized through the charge's own card. */
async function matches(repo: IntegrationsRepo, action: ActionRecord, charge: ChargeRecord): Promise<boolean> {
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
}

/**
 * Reconciles a card's posted charges (inside a write): each is matched to its own action, or
 * flagged. `fresh`: the charge just imported, always recorded; any other is recorded again only
 * when its match changed.
 */
export async function reconcileInWrite(
  deps: ReconcileDeps,
  wid: string,
  provider: CardProvider,
  cardId: string,
  actor: string,
  fresh?: string,
): Promise<void> {
  const { ledger, repo } = deps;
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
      if (!taken.has(a.id) && (await matches(repo, a, charge))) {
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
}
