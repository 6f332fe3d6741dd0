import type { ApprovalRecord } from '../approvals/records.js';
import { formatMoney } from '../lib/money.js';

/**
 * The words of an approval card: who may decide it, in plain English, and the same card as Slack
 * Block Kit blocks (a relay that posts to Slack sends them as they are; the buttons' `action_id`
 * is the decision and their `value` the button token, which is what POST /v1/hooks/slack reads).
 */
export function whoMayDecide(
  approval: Pick<ApprovalRecord, 'approvers' | 'requiredApprovals' | 'separationOfDuties'>,
  approvers: Array<{ id: string; name: string | null }> | null,
): string {
  const who = approvers
    ? `Only ${approvers.map((a) => a.name ?? a.id).join(', ')}`
    : 'Owners and admins, or the member the agent acts for';
  const count = approval.requiredApprovals > 1 ? `; ${approval.requiredApprovals} different people must approve` : '';
  const duties = approval.separationOfDuties ? '; not the person the agent acts for' : '';
  return `${who}${count}${duties}.`;
}

export function cardBlocks(
  card: { [field: string]: unknown },
  buttons: Array<{ decision: string; label: string; token: string }>,
): unknown[] {
  const a = card.approval as {
    summary: string;
    type: string;
    agent: { id: string; name: string | null } | null;
    expiresAt: string;
    whoMayDecide: string;
    payment: { amount: number; currency: string; merchant: string } | null;
  };
  // Plain text, never mrkdwn: names come from members and merchants, and must not be able to
  // format the card (a fake "Amount:" line, a link, an @channel).
  const field = (label: string, value: string) => ({
    type: 'plain_text',
    text: `${label}: ${value.replace(/\s+/g, ' ')}`.slice(0, 2000),
  });
  const fields = [
    ...(a.agent ? [field('Agent', a.agent.name ?? a.agent.id)] : []),
    field('Action', a.type),
    ...(a.payment
      ? [field('Amount', formatMoney(a.payment.amount, a.payment.currency)), field('Merchant', a.payment.merchant)]
      : []),
    field('Who may decide', a.whoMayDecide),
    field('Expires', a.expiresAt),
  ];
  return [
    { type: 'section', text: { type: 'plain_text', text: a.summary.slice(0, 3000) } },
    { type: 'section', fields },
    {
      type: 'actions',
      elements: buttons.map((b) => ({
        type: 'button',
        action_id: b.decision,
        value: b.token,
        text: { type: 'plain_text', text: b.label },
        style: b.decision === 'approve' ? 'primary' : 'danger',
      })),
    },
  ];
}
