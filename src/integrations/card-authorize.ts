import type { Gate } from '../gate/service.js';
import type { Ledger } from '../ledger/service.js';
import { merchantOf } from './card-match.js';
import type { CardAuthorization, CardDecision } from './cards.js';
import type { HookAnswer, HookEvents } from './hook-events.js';
import type { CardProvider } from './records.js';
import type { IntegrationsRepo } from './repo.js';

/**
 * A card's authorization request (cards.ts lists the rules), answered once per provider event:
 * an unmapped card declined (and recorded) in the answer's own write; a mapped one decided at the
 * gate as the card's agent, its answer and the card's claim on the action stored in the decision's
 * own write.
 */

export interface AuthorizeDeps {
  ledger: Ledger;
  gate: Gate;
  hookEvents: HookEvents;
  repo: IntegrationsRepo;
}

export async function authorizeCard(
  deps: AuthorizeDeps,
  wid: string,
  provider: CardProvider,
  auth: CardAuthorization,
  answerOf: (decision: CardDecision) => HookAnswer,
): Promise<HookAnswer> {
  const agentId = (await deps.repo.card(wid, provider, auth.cardId))?.agentId ?? null;
  return agentId
    ? decideAtGate(deps, wid, agentId, provider, auth, answerOf)
    : declineUnmapped(deps, wid, provider, auth, answerOf);
}

/** An unmapped card: declined, its ledger record written in the same write as the stored answer. */
function declineUnmapped(
  deps: AuthorizeDeps,
  wid: string,
  provider: CardProvider,
  auth: CardAuthorization,
  answerOf: (decision: CardDecision) => HookAnswer,
): Promise<HookAnswer> {
  const decision = { approved: false, actionId: null, reason: `Card ${auth.cardId} is not mapped to an agent.` };
  return deps.hookEvents.processOnce(wid, provider, auth.eventId, async () => {
    await deps.ledger.record({
      workspaceId: wid,
      actor: provider,
      kind: 'card.authorization_declined',
      subject: auth.eventId,
      data: { provider, cardId: auth.cardId, reason: 'unmapped card', amount: auth.amount, currency: auth.currency },
    });
    return answerOf(decision);
  });
}

/**
 * A mapped card: a `payment` at the gate as its agent. The answer (and this card's claim on the
 * action) is stored in the decision's own write: one flush on the card network's deadline path,
 * and no decision without its answer.
 */
async function decideAtGate(
  deps: AuthorizeDeps,
  wid: string,
  agentId: string,
  provider: CardProvider,
  auth: CardAuthorization,
  answerOf: (decision: CardDecision) => HookAnswer,
): Promise<HookAnswer> {
  const { gate, hookEvents, repo } = deps;
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
}
