import { createHash, createHmac, randomBytes } from 'node:crypto';
import { AppError } from '../errors/app-error.js';
import type { Approvals, ApproveOutcome, Decider } from '../approvals/service.js';
import type { IntegrationRegistry } from '../integrations/registry.js';
import type { Once } from '../integrations/once.js';
import type { Ledger, LedgerRecord } from '../ledger/service.js';
import type { LedgerSubscriber } from '../ledger/subscribers.js';
import { isoAt, type Clock } from '../lib/clock.js';
import { formatMoney } from '../lib/money.js';
import { SIGNATURE_TOLERANCE_SECONDS } from '../lib/svc-signature.js';
import type { PeopleService } from '../people/index.js';
import type { Store } from '../store/index.js';
import type { ChatUserRecord } from './records.js';
import type { Webhooks } from '../webhooks/service.js';
import { cardBlocks, whoMayDecide } from './card.js';
import { chatRepo } from './repo.js';

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
 */
export const CARD_TARGET = 'chat-relay';
export const CARD_EVENT = 'approval.card';
/** A button is kept this long past its approval's expiry (then swept: retention/policy.ts), so a late click gets a clear answer. */
export const BUTTON_GRACE_MS = 24 * 3_600_000;

export type ButtonDecision = 'approve' | 'deny';
export interface Click {
  token: string;
  platform: string;
  chatUserId: string;
  note: string | null;
  channel: 'chat-relay' | 'slack';
  /** Slack: the team the click came from, checked against the workspace's `teamId` when it set one. */
  team?: string | null;
}

export interface ClickResult {
  decision: ButtonDecision;
  outcome: ApproveOutcome;
}

/** The card as stored in the outbox: buttons carry their salt; sending turns each into its token. */
interface StoredCard {
  buttons: Array<{ decision: ButtonDecision; label: string; salt?: string; token?: string }>;
  [field: string]: unknown;
}

export function createChat(deps: {
  store: Store;
  clock: Clock;
  ledger: Ledger;
  webhooks: Webhooks;
  registry: IntegrationRegistry;
  approvals: Approvals;
  people: PeopleService;
  once: Once;
  buttonKey: Buffer;
  publicUrl: () => string;
}) {
  const { store, clock, ledger, webhooks, registry, approvals, people, once, buttonKey } = deps;
  const repo = chatRepo(store);
  const tokenOf = (salt: string) => `cbt_${createHmac('sha256', buttonKey).update(salt).digest('base64url')}`;
  const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');
  const relayUrl = async (wid: string): Promise<string | undefined> => {
    const url = (await registry.configOf<{ url?: unknown }>(wid, 'chat-relay'))?.url;
    return typeof url === 'string' && url.length > 0 ? url : undefined;
  };

  webhooks.registerTarget(CARD_TARGET, {
    async resolve(wid) {
      const [url, secrets] = await Promise.all([relayUrl(wid), registry.secretsFor(wid, 'chat-relay')]);
      const secret = secrets[0];
      return url && secret ? { url, secret } : null;
    },
    render(_wid, body) {
      const card = JSON.parse(body) as StoredCard;
      const buttons = card.buttons.map(({ salt, ...b }) => ({ ...b, token: tokenOf(salt!) }));
      return JSON.stringify({ ...card, buttons, slack: { blocks: cardBlocks(card, buttons) } });
    },
  });

  /**
   * The card of an approval requested now, queued in the same write as its ledger record: an
   * action waiting for a person (`action.pending_approval`), or a bulk freeze past the ceiling
   * (`fleet.freeze_requested`, decided by owners and admins).
   */
  const cardInWrite = async (record: LedgerRecord): Promise<void> => {
    const wid = record.workspaceId;
    const isFreeze = record.kind === 'fleet.freeze_requested';
    if ((record.kind !== 'action.pending_approval' && !isFreeze) || !(await relayUrl(wid))) return;
    // The gate writes the approval before this record and the action after it: what the card says
    // of the action comes from the record itself.
    const approval = await repo.approval(wid, isFreeze ? record.subject : String(record.data.approvalId ?? ''));
    if (!approval || approval.status !== 'pending') return;
    if (isFreeze ? !approval.freeze : approval.actionId !== record.subject) return;
    const action = isFreeze
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
    const agent = isFreeze ? undefined : await repo.agent(wid, approval.agentId);
    const buttons: Array<{ decision: ButtonDecision; label: string; salt: string }> = [];
    for (const decision of ['approve', 'deny'] as const) {
      const salt = randomBytes(32).toString('base64url');
      await repo.putButton(hashOf(tokenOf(salt)), {
        workspaceId: wid,
        approvalId: approval.id,
        decision,
        expiresAt: approval.expiresAt,
      });
      buttons.push({ decision, label: decision === 'approve' ? 'Approve' : 'Deny', salt });
    }
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
      answerTo: `${deps.publicUrl()}/v1/hooks/chat-relay/${wid}`,
    };
    await webhooks.enqueueInWrite(wid, CARD_TARGET, {
      eventId: record.id,
      eventType: CARD_EVENT,
      body: JSON.stringify(card),
      createdAt: record.at,
    });
  };

  /** The member a chat user is mapped to, as the console would see them: role checked for deciding. */
  const deciderFor = async (wid: string, click: Click): Promise<Decider> => {
    const mapped = await repo.chatUser(wid, click.platform, click.chatUserId);
    if (!mapped) {
      throw new AppError('forbidden', {
        message: `The ${click.platform} user ${click.chatUserId} is not mapped to a member of this workspace; nothing was decided.`,
        fix: `Ask an owner or an admin to map it: PUT /api/w/${wid}/chat/users/${click.platform}/${click.chatUserId} { "userId": "usr_…" }.`,
      });
    }
    let me: Awaited<ReturnType<PeopleService['me']>> | undefined;
    try {
      me = await people.me(mapped.userId);
    } catch {
      me = undefined;
    }
    if (!me || !me.workspaces.some((w) => w.id === wid)) {
      throw new AppError('forbidden', {
        message: `The ${click.platform} user ${click.chatUserId} is mapped to ${mapped.userId}, who is no longer a member of this workspace; nothing was decided.`,
        fix: 'Ask an owner or an admin to map this chat user to a current member.',
      });
    }
    // The console's own check for a signed-in member (role, one-time password): same errors.
    const role = await people.authorize(wid, me.user, 'approvals.decide');
    return {
      userId: me.user.id,
      role,
      actor: `user:${me.user.id}`,
      via: { channel: click.channel, platform: click.platform, chatUserId: click.chatUserId },
    };
  };

  return {
    /**
     * A test card for the chat relay, asked for from the console: signed with the relay's secret
     * and delivered to its address like an approval card (the same queue, retries and delivery
     * log), with no buttons and nothing waiting, so the person setting the relay up sees it
     * arrive. Recorded in the ledger as `integration.test_sent`.
     */
    async sendTestCard(wid: string, actor: string): Promise<{ eventId: string; url: string }> {
      const url = await relayUrl(wid);
      if (!url || (await registry.secretsFor(wid, 'chat-relay')).length === 0) {
        throw new AppError('invalid_request', {
          message: 'The chat relay is not set up: there is nowhere to send a test card.',
          fix: 'Set it up first with its address (the console: Integrations, Chat relay).',
        });
      }
      return store.write(async () => {
        const record = await ledger.record({
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
          answerTo: `${deps.publicUrl()}/v1/hooks/chat-relay/${wid}`,
        };
        await webhooks.enqueueInWrite(wid, CARD_TARGET, {
          eventId: record.id,
          eventType: CARD_EVENT,
          body: JSON.stringify(card),
          createdAt: record.at,
        });
        return { eventId: record.id, url };
      });
    },

    /** Queues the card of each approval requested, in its ledger record's write; the composition root subscribes it. */
    cards: { onRecordInWrite: cardInWrite } satisfies LedgerSubscriber,

    /**
     * Decides a click: the button's approval and decision, by the member the chat user is mapped
     * to. `workspaces`: the workspaces the request's signature proved (the relay's one; for Slack,
     * every workspace whose signing secret matched): a token of any other is unknown.
     */
    async click(
      workspaces: readonly string[],
      click: Click,
      expected?: ButtonDecision,
    ): Promise<ClickResult & { workspaceId: string; approvalId: string }> {
      const button = /^cbt_[A-Za-z0-9_-]{43}$/.test(click.token) ? await repo.button(hashOf(click.token)) : undefined;
      if (!button || !workspaces.includes(button.workspaceId)) {
        throw new AppError('not_found', {
          message: 'This button is unknown here, or its approval ended long ago; nothing was decided.',
          fix: 'Use the buttons of a current approval card.',
        });
      }
      if (expected !== undefined && expected !== button.decision) {
        throw new AppError('invalid_request', {
          message: `The action (${expected}) does not match its button (${button.decision}); nothing was decided.`,
          details: { errors: [{ field: 'actions.0.action_id', message: `this button ${button.decision}s` }] },
        });
      }
      if (click.channel !== 'slack' && click.platform === 'slack') {
        throw new AppError('forbidden', {
          message:
            "A Slack user's click counts only when Slack itself signs it (POST /v1/hooks/slack); nothing was decided.",
          fix: 'Send Slack clicks to /v1/hooks/slack, or map the person under the platform the relay speaks for.',
        });
      }
      const wid = button.workspaceId;
      const teamId =
        click.channel === 'slack' ? (await registry.configOf<{ teamId?: unknown }>(wid, 'slack'))?.teamId : undefined;
      if (typeof teamId === 'string' && click.team !== teamId) {
        throw new AppError('forbidden', {
          message: 'This click came from a Slack team this workspace did not set up; nothing was decided.',
          fix: 'Click the card in the Slack team set up for this workspace.',
        });
      }
      const who = await deciderFor(wid, click);
      const outcome =
        button.decision === 'approve'
          ? await approvals.approve(wid, button.approvalId, who, click.note)
          : await approvals.deny(wid, button.approvalId, who, click.note);
      return { decision: button.decision, outcome, workspaceId: wid, approvalId: button.approvalId };
    },

    /** Accepts a signed request's signature once per scope, for as long as its timestamp could be fresh. */
    async claimSignature(scope: string, signature: string): Promise<boolean> {
      const until = clock.now() + 2 * SIGNATURE_TOLERANCE_SECONDS * 1000 + 60_000;
      return once.claim(scope, signature, until);
    },

    users(wid: string): Promise<ChatUserRecord[]> {
      return repo.chatUsers(wid);
    },

    /**
     * Maps a chat identity to the person asking (or removes a mapping with null); recorded in the
     * ledger. A person maps only their own chat identity: nobody (an admin included) can make a
     * chat user speak for someone else. A mapping held by another person is removed by them, or
     * by an owner or admin, before it can be taken.
     */
    async mapUser(
      wid: string,
      platform: string,
      chatUserId: string,
      userId: string | null,
      by: { actor: string; self: string; manager: boolean },
    ): Promise<ChatUserRecord | { platform: string; chatUserId: string; userId: null }> {
      return store.write(async () => {
        const before = await repo.chatUser(wid, platform, chatUserId);
        if (userId !== null) {
          if (userId !== by.self) {
            throw new AppError('forbidden', {
              message: 'A person maps only their own chat identity; nothing was changed.',
              fix: `Ask that person to sign in and map it: PUT /api/w/${wid}/chat/users/${platform}/${chatUserId} { "userId": "<their usr_ id>" }.`,
            });
          }
          if (!(await repo.member(wid, userId)))
            throw new AppError('not_found', { message: `No member ${userId} in this workspace.` });
          if (before && before.userId !== userId) {
            throw new AppError('forbidden', {
              message: `The ${platform} user ${chatUserId} is mapped to another member; nothing was changed.`,
              fix: 'That member, an owner or an admin must remove the mapping first.',
            });
          }
        } else if (before && before.userId !== by.self && !by.manager) {
          throw new AppError('forbidden', {
            message: `The ${platform} user ${chatUserId} is mapped to another member; only they, an owner or an admin may remove it.`,
          });
        }
        const after =
          userId === null ? null : { platform, chatUserId, userId, updatedAt: isoAt(clock.now()), updatedBy: by.actor };
        if (after) await repo.putChatUser(wid, after);
        else if (before) await repo.removeChatUser(wid, platform, chatUserId);
        if ((before?.userId ?? null) !== userId) {
          await ledger.record({
            workspaceId: wid,
            actor: by.actor,
            kind: 'chat.user_mapped',
            subject: `${platform}:${chatUserId}`,
            data: { platform, chatUserId, userId, previous: before?.userId ?? null },
          });
        }
        return after ?? { platform, chatUserId, userId: null };
      });
    },

    /** The cards sent (or being sent) to the relay, newest first: status and tries, never tokens. */
    async deliveries(wid: string) {
      return (await webhooks.deliveriesOf(wid, CARD_TARGET)).map(({ body: _body, ...d }) => d);
    },
  };
}

export type Chat = ReturnType<typeof createChat>;
