import { AppError } from '../errors/app-error.js';
import type { ApproveOutcome, Decider } from '../approvals/service.js';
import type { PublicUser, WorkspaceView } from '../people/index.js';
import type { ButtonDecision } from './approval-card.js';
import type { ChatContext } from './context.js';

/**
 * A click on a card's button, decided exactly as the console decides it for the member the chat
 * user is mapped to: the same permission check, the same Decider, the same approvals call. Checked
 * in order: the button is known in a workspace the request's signature proved; the action matches
 * the button; a Slack user's click came signed by Slack; the Slack team is the workspace's; the
 * chat user is mapped to a current member who may decide. Nothing changes when any check fails.
 */
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

/** The button a token names, in one of `workspaces`. */
async function knownButton(ctx: ChatContext, workspaces: readonly string[], token: string) {
  const button = /^cbt_[A-Za-z0-9_-]{43}$/.test(token) ? await ctx.repo.button(ctx.hashOf(token)) : undefined;
  if (!button || !workspaces.includes(button.workspaceId)) {
    throw new AppError('not_found', {
      message: 'This button is unknown here, or its approval ended long ago; nothing was decided.',
      fix: 'Use the buttons of a current approval card.',
    });
  }
  return button;
}

function sameDecision(expected: ButtonDecision | undefined, button: { decision: ButtonDecision }): void {
  if (expected !== undefined && expected !== button.decision) {
    throw new AppError('invalid_request', {
      message: `The action (${expected}) does not match its button (${button.decision}); nothing was decided.`,
      details: { errors: [{ field: 'actions.0.action_id', message: `this button ${button.decision}s` }] },
    });
  }
}

function slackSignedBySlack(click: Click): void {
  if (click.channel !== 'slack' && click.platform === 'slack') {
    throw new AppError('forbidden', {
      message:
        "A Slack user's click counts only when Slack itself signs it (POST /v1/hooks/slack); nothing was decided.",
      fix: 'Send Slack clicks to /v1/hooks/slack, or map the person under the platform the relay speaks for.',
    });
  }
}

async function slackTeamOfWorkspace(ctx: ChatContext, wid: string, click: Click): Promise<void> {
  const teamId =
    click.channel === 'slack' ? (await ctx.registry.configOf<{ teamId?: unknown }>(wid, 'slack'))?.teamId : undefined;
  if (typeof teamId === 'string' && click.team !== teamId) {
    throw new AppError('forbidden', {
      message: 'This click came from a Slack team this workspace did not set up; nothing was decided.',
      fix: 'Click the card in the Slack team set up for this workspace.',
    });
  }
}

/** The member a chat user is mapped to, as the console would see them: role checked for deciding. */
async function deciderFor(ctx: ChatContext, wid: string, click: Click): Promise<Decider> {
  const mapped = await ctx.repo.chatUser(wid, click.platform, click.chatUserId);
  if (!mapped) {
    throw new AppError('forbidden', {
      message: `The ${click.platform} user ${click.chatUserId} is not mapped to a member of this workspace; nothing was decided.`,
      fix: `Ask an owner or an admin to map it: PUT /api/w/${wid}/chat/users/${click.platform}/${click.chatUserId} { "userId": "usr_…" }.`,
    });
  }
  let me: { user: PublicUser; workspaces: WorkspaceView[] } | undefined;
  try {
    me = await ctx.people.me(mapped.userId);
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
  const role = await ctx.people.authorize(wid, me.user, 'approvals.decide');
  return {
    userId: me.user.id,
    role,
    actor: `user:${me.user.id}`,
    via: { channel: click.channel, platform: click.platform, chatUserId: click.chatUserId },
  };
}

/**
 * Decides a click: the button's approval and decision, by the member the chat user is mapped
 * to. `workspaces`: the workspaces the request's signature proved (the relay's one; for Slack,
 * every workspace whose signing secret matched): a token of any other is unknown.
 */
export async function decideClick(
  ctx: ChatContext,
  workspaces: readonly string[],
  click: Click,
  expected?: ButtonDecision,
): Promise<ClickResult & { workspaceId: string; approvalId: string }> {
  const button = await knownButton(ctx, workspaces, click.token);
  sameDecision(expected, button);
  slackSignedBySlack(click);
  const wid = button.workspaceId;
  await slackTeamOfWorkspace(ctx, wid, click);
  const who = await deciderFor(ctx, wid, click);
  const outcome =
    button.decision === 'approve'
      ? await ctx.approvals.approve(wid, button.approvalId, who, click.note)
      : await ctx.approvals.deny(wid, button.approvalId, who, click.note);
  return { decision: button.decision, outcome, workspaceId: wid, approvalId: button.approvalId };
}
