import { AppError } from '../errors/app-error.js';
import { CARD_EVENT, CARD_TARGET } from './approval-card.js';
import type { ChatContext } from './context.js';

/**
 * A test card for the chat relay, asked for from the console: signed with the relay's secret and
 * delivered to its address like an approval card (the same queue, retries and delivery log), with
 * no buttons and nothing waiting, so the person setting the relay up sees it arrive. Recorded in
 * the ledger as `integration.test_sent`.
 */
export async function sendTestCard(
  ctx: ChatContext,
  wid: string,
  actor: string,
): Promise<{ eventId: string; url: string }> {
  const url = await ctx.relayUrl(wid);
  if (!url || (await ctx.registry.secretsFor(wid, 'chat-relay')).length === 0) {
    throw new AppError('invalid_request', {
      message: 'The chat relay is not set up: there is nowhere to send a test card.',
      fix: 'Set it up first with its address (the console: Integrations, Chat relay).',
    });
  }
  return ctx.store.write(async () => {
    const record = await ctx.ledger.record({
      workspaceId: wid,
      actor,
      kind: 'integration.test_sent',
      subject: 'chat-relay',
      data: { url },
    });
    const card = {
      id: record.id,
      type: CARD_EVENT,
      test: true,
      createdAt: record.at,
      workspaceId: wid,
      approval: {
        id: null,
        actionId: null,
        type: 'test',
        summary: 'A test card from svc: the relay is set up. Nothing waits for a decision.',
        agent: null,
        payment: null,
        amountText: null,
        target: null,
        requiredApprovals: 0,
        separationOfDuties: false,
        approvers: null,
        whoMayDecide: 'Nobody: this is a test.',
        expiresAt: record.at,
      },
      buttons: [],
      answerTo: `${ctx.publicUrl()}/v1/hooks/chat-relay/${wid}`,
    };
    await ctx.webhooks.enqueueInWrite(wid, CARD_TARGET, {
      eventId: record.id,
      eventType: CARD_EVENT,
      body: JSON.stringify(card),
      createdAt: record.at,
    });
    return { eventId: record.id, url };
  });
}
