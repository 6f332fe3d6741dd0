import { randomBytes } from 'node:crypto';
import type { AppendedRecord } from '../ledger/service.js';
import { formatMoney } from '../lib/money.js';
import type { ApprovalRecord } from '../approvals/records.js';
import { cardBlocks, whoMayDecide } from './card.js';
import type { ChatContext } from './context.js';

/**
 * The approval card: queued to the chat relay on the webhooks outbox in the same write as the
 * ledger record of an approval requested, with two buttons whose tokens are computed only when
 * the card is sent (the outbox keeps each button's salt, the store its token's SHA-256).
 */
export const CARD_TARGET = 'chat-relay';
export const CARD_EVENT = 'approval.card';

export type ButtonDecision = 'approve' | 'deny';

/** The card as stored in the outbox: buttons carry their salt; sending turns each into its token. */
interface StoredCard {
  buttons: Array<{ decision: ButtonDecision; label: string; salt?: string; token?: string }>;
  [field: string]: unknown;
}

/** The relay as a webhooks target: its address and secret, and each card rendered with its tokens and Slack blocks. */
export function registerCardTarget(ctx: ChatContext): void {
  ctx.webhooks.registerTarget(CARD_TARGET, {
    async resolve(wid) {
      const [url, secrets] = await Promise.all([ctx.relayUrl(wid), ctx.registry.secretsFor(wid, 'chat-relay')]);
      const secret = secrets[0];
      return url && secret ? { url, secret } : null;
    },
    render(_wid, body) {
      const card = JSON.parse(body) as StoredCard;
      const buttons = card.buttons.map(({ salt, ...b }) => ({ ...b, token: ctx.tokenOf(salt!) }));
      return JSON.stringify({ ...card, buttons, slack: { blocks: cardBlocks(card, buttons) } });
    },
  });
}

/** What the card says of the action: from the ledger record itself, or the freeze the approval asks for. */
function actionOf(record: AppendedRecord, approval: ApprovalRecord, isFreeze: boolean) {
  return isFreeze
    ? {
        type: 'freeze',
        summary: `Freeze ${approval.freeze!.agentIds.length} agents: ${approval.freeze!.reason}`.slice(0, 1000),
        payment: null,
        target: null,
      }
    : (record.data as {
        type: string;
        summary: string;
        payment: { amount: number; currency: string; merchant: string } | null;
        target: unknown;
      });
}

/** Inside the write: an approve and a deny button, each with a fresh salt, stored by their token's hash. */
async function buttonsInWrite(ctx: ChatContext, wid: string, approval: ApprovalRecord) {
  const buttons: Array<{ decision: ButtonDecision; label: string; salt: string }> = [];
  for (const decision of ['approve', 'deny'] as const) {
    const salt = randomBytes(32).toString('base64url');
    await ctx.repo.putButton(ctx.hashOf(ctx.tokenOf(salt)), {
      workspaceId: wid,
      approvalId: approval.id,
      decision,
      expiresAt: approval.expiresAt,
    });
    buttons.push({ decision, label: decision === 'approve' ? 'Approve' : 'Deny', salt });
  }
  return buttons;
}

/**
 * The card of an approval requested now, queued in the same write as its ledger record: an
 * action waiting for a person (`action.pending_approval`), or a bulk freeze past the ceiling
 * (`fleet.freeze_requested`, decided by owners and admins).
 */
export async function cardInWrite(ctx: ChatContext, record: AppendedRecord): Promise<void> {
  const { repo } = ctx;
  const wid = record.workspaceId;
  const isFreeze = record.kind === 'fleet.freeze_requested';
  if ((record.kind !== 'action.pending_approval' && !isFreeze) || !(await ctx.relayUrl(wid))) return;
  // The gate writes the approval before this record and the action after it: what the card says
  // of the action comes from the record itself.
  const approval = await repo.approval(wid, isFreeze ? record.subject : String(record.data.approvalId ?? ''));
  if (!approval || approval.status !== 'pending') return;
  if (isFreeze ? !approval.freeze : approval.actionId !== record.subject) return;
  const action = actionOf(record, approval, isFreeze);
  const agent = isFreeze ? undefined : await repo.agent(wid, approval.agentId);
  const buttons = await buttonsInWrite(ctx, wid, approval);
  const approvers = approval.approvers
    ? await Promise.all(approval.approvers.map(async (id) => ({ id, name: (await repo.user(id))?.name ?? null })))
    : null;
  const card = {
    id: record.id,
    type: CARD_EVENT,
    createdAt: record.at,
    workspaceId: wid,
    approval: {
      id: approval.id,
      actionId: approval.actionId || null,
      type: action.type,
      summary: action.summary,
      agent: isFreeze ? null : { id: approval.agentId, name: agent?.name ?? null },
      payment: action.payment ?? null,
      // The amount as people read it, for a relay that renders its own card.
      amountText: action.payment ? formatMoney(action.payment.amount, action.payment.currency) : null,
      target: action.target ?? null,
      ...(isFreeze
        ? {
            freeze: {
              count: approval.freeze!.agentIds.length,
              agentIds: approval.freeze!.agentIds,
              reason: approval.freeze!.reason,
              requestedBy: approval.freeze!.requestedBy,
            },
          }
        : {}),
      requiredApprovals: approval.requiredApprovals,
      separationOfDuties: approval.separationOfDuties,
      approvers,
      whoMayDecide: isFreeze ? 'Owners and admins.' : whoMayDecide(approval, approvers),
      expiresAt: approval.expiresAt,
    },
    buttons,
    answerTo: `${ctx.publicUrl()}/v1/hooks/chat-relay/${wid}`,
  };
  await ctx.webhooks.enqueueInWrite(wid, CARD_TARGET, {
    eventId: record.id,
    eventType: CARD_EVENT,
    body: JSON.stringify(card),
    createdAt: record.at,
  });
}
