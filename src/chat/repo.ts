import type { Store } from '../store/index.js';
import type { AgentRecord } from '../agents/records.js';
import type { ApprovalRecord } from '../approvals/records.js';
import type { ChatButtonRecord, ChatUserRecord } from './records.js';
import type { MemberRecord, UserRecord } from '../people/records.js';

/**
 * Chat approvals' tables: buttons (by their token's SHA-256) and chat identities mapped to
 * members; and the reads of other domains' records a card shows (approval, agent, approvers).
 * Writes only inside `store.write`.
 */
export function chatRepo(store: Store) {
  const t = store.tables;
  return {
    /**
     * Inside a write: removes every chat identity mapped to a person in a workspace, and counts
     * them. A person who leaves, or whose access an identity provider revoked, no longer decides
     * anything from chat; a new mapping needs them signed in again (they map only their own identity).
     */
    async endMappingsOf(wid: string, uid: string): Promise<number> {
      const mine = (await t.chatUsers.scan([wid])).filter((e) => e.value.userId === uid);
      for (const e of mine) await t.chatUsers.remove(e.key);
      return mine.length;
    },
    button(hash: string): Promise<ChatButtonRecord | undefined> {
      return t.chatButtons.get(hash);
    },
    putButton(hash: string, button: ChatButtonRecord): Promise<void> {
      return t.chatButtons.put(hash, button);
    },
    chatUser(wid: string, platform: string, chatUserId: string): Promise<ChatUserRecord | undefined> {
      return t.chatUsers.get([wid, platform, chatUserId]);
    },
    putChatUser(wid: string, user: ChatUserRecord): Promise<void> {
      return t.chatUsers.put([wid, user.platform, user.chatUserId], user);
    },
    removeChatUser(wid: string, platform: string, chatUserId: string): Promise<void> {
      return t.chatUsers.remove([wid, platform, chatUserId]);
    },
    async chatUsers(wid: string): Promise<ChatUserRecord[]> {
      return (await t.chatUsers.scan([wid])).map((e) => e.value);
    },
    approval(wid: string, id: string): Promise<ApprovalRecord | undefined> {
      return t.approvals.get([wid, id]);
    },
    agent(wid: string, id: string): Promise<AgentRecord | undefined> {
      return t.agents.get([wid, id]);
    },
    user(id: string): Promise<UserRecord | undefined> {
      return t.users.get(id);
    },
    member(wid: string, uid: string): Promise<MemberRecord | undefined> {
      return t.members.get([wid, uid]);
    },
  };
}

export type ChatRepo = ReturnType<typeof chatRepo>;
