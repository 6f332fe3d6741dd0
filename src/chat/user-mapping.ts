import { AppError } from '../errors/app-error.js';
import { isoAt } from '../lib/clock.js';
import type { ChatUserRecord } from './records.js';
import type { ChatContext } from './context.js';

/** Who maps: the ledger's actor, the person asking, and whether they manage the workspace (owner or admin). */
export interface MappingActor {
  actor: string;
  self: string;
  manager: boolean;
}

/**
 * Maps a chat identity to the person asking (or removes a mapping with null); recorded in the
 * ledger when it changes. A person maps only their own chat identity: nobody (an admin included)
 * can make a chat user speak for someone else. A mapping held by another person is removed by
 * them, or by an owner or admin, before it can be taken.
 */
export async function mapUser(
  ctx: ChatContext,
  wid: string,
  platform: string,
  chatUserId: string,
  userId: string | null,
  by: MappingActor,
): Promise<ChatUserRecord | { platform: string; chatUserId: string; userId: null }> {
  const { store, repo, clock, ledger } = ctx;
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
}
