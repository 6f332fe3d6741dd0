import { createHash, createHmac } from 'node:crypto';
import type { LedgerSubscriber } from '../ledger/subscribers.js';
import { SIGNATURE_TOLERANCE_SECONDS } from '../lib/svc-signature.js';
import type { DeliveryRecord } from '../webhooks/records.js';
import type { ChatUserRecord } from './records.js';
import { CARD_TARGET, cardInWrite, registerCardTarget, type ButtonDecision } from './approval-card.js';
import { decideClick, type Click, type ClickResult } from './click.js';
import type { ChatContext, ChatDeps } from './context.js';
import { chatRepo } from './repo.js';
import { sendTestCard } from './test-card.js';
import { mapUser, type MappingActor } from './user-mapping.js';

/**
 * Approvals decided from chat (issue 8; docs/integrations.md#approvals-from-chat).
 * Rules:
 * - When an action waits for a person (ledger record `action.pending_approval`) and the workspace
 *   has the chat relay set up with a `url`, a card is queued to the relay in the same write, on the
 *   webhooks outbox (same retries, backoff and target checks; signed with the relay's secret).
 * - Each card has two buttons, approve and deny, each with its own random token. A token is a
 *   function of a random salt and a key derived from the master key: the outbox keeps the salt,
 *   the store keeps the token's SHA-256 (`chatButtons`), and the token itself is never stored; it
 *   is computed when the card is sent, the same on every try. A token resolves to its approval and
 *   decision until the approval's expiry (it is not used up by a click: a two-person rule needs
 *   two people to click the same button; the approval's own rules stop a second click by the same
 *   person, and each signed request is accepted once).
 * - A click is decided only for a chat user an owner or admin mapped to a member (`chatUsers`),
 *   and exactly as the console decides it for that member: the same permission check of the
 *   member's role, the same Decider, the same approvals service call, so who may decide, named
 *   approvers, separation of duties, second person, holds and the fresh mandate check all apply
 *   and their errors come back. The approval's ledger record names the member (the actor) and,
 *   in the same record, that it came from chat (`data.via`: channel, platform, chat user).
 * - An unknown token, a token of another workspace, an unmapped chat user, a mapping to someone
 *   no longer a member, an approval already decided: nothing changes; the caller gets the error.
 *
 * The operations, one file each: the approval card (approval-card.ts), the test card
 * (test-card.ts), a click (click.ts), a chat identity's mapping (user-mapping.ts).
 */
export { CARD_EVENT, CARD_TARGET, type ButtonDecision } from './approval-card.js';
export type { Click, ClickResult } from './click.js';
export type { ChatDeps } from './context.js';
export type { MappingActor } from './user-mapping.js';
/** A button is kept this long past its approval's expiry (then swept: retention/policy.ts), so a late click gets a clear answer. */
export const BUTTON_GRACE_MS = 24 * 3_600_000;

/**
 * Approvals decided from chat. Writes the buttons (`chatButtons`) and chat identities
 * (`chatUsers`) through repo.ts, queues cards on the webhooks outbox, reads approvals, agents and
 * people for a card, decides through the approvals service, and records mappings and test cards
 * in the ledger.
 */
export interface Chat {
  /**
   * A test card for the chat relay, delivered like an approval card, with no buttons and nothing
   * waiting; recorded as `integration.test_sent` (test-card.ts).
   */
  sendTestCard(wid: string, actor: string): Promise<{ eventId: string; url: string }>;
  /** Queues the card of each approval requested, in its ledger record's write; the composition root subscribes it. */
  cards: LedgerSubscriber;
  /**
   * Decides a click (click.ts): the button's approval and decision, by the member the chat user
   * is mapped to. `workspaces`: the workspaces the request's signature proved; a token of any
   * other is unknown.
   */
  click(
    workspaces: readonly string[],
    click: Click,
    expected?: ButtonDecision,
  ): Promise<ClickResult & { workspaceId: string; approvalId: string }>;
  /** Accepts a signed request's signature once per scope, for as long as its timestamp could be fresh. */
  claimSignature(scope: string, signature: string): Promise<boolean>;
  /** The workspace's chat identities and the members they are mapped to. */
  users(wid: string): Promise<ChatUserRecord[]>;
  /**
   * Maps a chat identity to the person asking, or removes a mapping with null (user-mapping.ts);
   * recorded in the ledger. A person maps only their own chat identity.
   */
  mapUser(
    wid: string,
    platform: string,
    chatUserId: string,
    userId: string | null,
    by: MappingActor,
  ): Promise<ChatUserRecord | { platform: string; chatUserId: string; userId: null }>;
  /** The cards sent (or being sent) to the relay, newest first: status and tries, never tokens. */
  deliveries(wid: string): Promise<Array<Omit<DeliveryRecord, 'body'>>>;
}

export function createChat(deps: ChatDeps): Chat {
  const repo = chatRepo(deps.store);
  const ctx: ChatContext = {
    ...deps,
    repo,
    tokenOf: (salt) => `cbt_${createHmac('sha256', deps.buttonKey).update(salt).digest('base64url')}`,
    hashOf: (token) => createHash('sha256').update(token).digest('hex'),
    async relayUrl(wid) {
      const url = (await deps.registry.configOf<{ url?: unknown }>(wid, 'chat-relay'))?.url;
      return typeof url === 'string' && url.length > 0 ? url : undefined;
    },
  };
  registerCardTarget(ctx);

  return {
    sendTestCard: (wid, actor) => sendTestCard(ctx, wid, actor),
    cards: { onRecordInWrite: (record) => cardInWrite(ctx, record) },
    click: (workspaces, click, expected) => decideClick(ctx, workspaces, click, expected),
    claimSignature(scope, signature) {
      const until = deps.clock.now() + 2 * SIGNATURE_TOLERANCE_SECONDS * 1000 + 60_000;
      return deps.once.claim(scope, signature, until);
    },
    users: (wid) => repo.chatUsers(wid),
    mapUser: (wid, platform, chatUserId, userId, by) => mapUser(ctx, wid, platform, chatUserId, userId, by),
    async deliveries(wid) {
      return (await deps.webhooks.deliveriesOf(wid, CARD_TARGET)).map(({ body: _body, ...d }) => d);
    },
  };
}
