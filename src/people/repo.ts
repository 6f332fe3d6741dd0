import type { Store } from '../store/index.js';
import type { MemberRecord, Role, SessionRecord, UserRecord, WorkspaceRecord } from './records.js';
import { endConnectionsInWrite } from '../oauth/connections.js';
import { endChatMappingsInWrite } from '../chat/mappings.js';

/** Reads and writes of workspaces, people, memberships and sessions. Writes go inside store.write(). */
export function peopleRepo(store: Store) {
  const t = store.tables;
  return {
    async workspaceCount(): Promise<number> {
      return (await t.workspaces.scan([], { limit: 1 })).length;
    },
    getWorkspace(wid: string): Promise<WorkspaceRecord | undefined> {
      return t.workspaces.get(wid);
    },
    async putWorkspace(ws: WorkspaceRecord): Promise<void> {
      await t.workspaces.put(ws.id, ws);
    },
    async userByEmail(email: string): Promise<UserRecord | undefined> {
      const uid = await t.usersByEmail.get(email.trim().toLowerCase());
      return uid === undefined ? undefined : t.users.get(uid);
    },
    getUser(uid: string): Promise<UserRecord | undefined> {
      return t.users.get(uid);
    },
    async putUser(user: UserRecord): Promise<void> {
      await t.users.put(user.id, user);
      await t.usersByEmail.put(user.email.trim().toLowerCase(), user.id);
    },
    async putMember(member: MemberRecord): Promise<void> {
      await t.members.put([member.workspaceId, member.userId], member);
      await t.userWorkspaces.put([member.userId, member.workspaceId], member.role);
    },
    async roleIn(wid: string, uid: string): Promise<Role | undefined> {
      return (await t.members.get([wid, uid]))?.role;
    },
    getMember(wid: string, uid: string): Promise<MemberRecord | undefined> {
      return t.members.get([wid, uid]);
    },
    /** A workspace's memberships in user id order, from after `after` (a user id). */
    async listMembers(wid: string, options: { after?: string; limit?: number }): Promise<MemberRecord[]> {
      return (await t.members.scan([wid], options)).map((e) => e.value);
    },
    async removeMember(wid: string, uid: string): Promise<void> {
      await t.members.remove([wid, uid]);
      await t.userWorkspaces.remove([uid, wid]);
    },
    /** How many owners a workspace has (a scan of its memberships: workspaces are small). */
    async ownerCount(wid: string): Promise<number> {
      let owners = 0;
      for (const { value } of await t.members.scan([wid])) if (value.role === 'owner') owners += 1;
      return owners;
    },
    async workspacesOf(uid: string): Promise<Array<{ workspace: WorkspaceRecord; role: Role }>> {
      // One read after another: this also runs inside writes, whose reads share one connection.
      const out: Array<{ workspace: WorkspaceRecord; role: Role }> = [];
      for (const { key, value } of await t.userWorkspaces.scan([uid])) {
        const workspace = await t.workspaces.get(String(key[1]));
        if (workspace) out.push({ workspace, role: value });
      }
      return out;
    },
    getSession(hash: string): Promise<SessionRecord | undefined> {
      return t.sessions.get(hash);
    },
    async putSession(hash: string, session: SessionRecord): Promise<void> {
      await t.sessions.put(hash, session);
      await t.sessionsByUser.put([session.userId, hash], session.expiresAt);
    },
    async removeSession(hash: string): Promise<void> {
      const session = await t.sessions.get(hash);
      await t.sessions.remove(hash);
      if (session) await t.sessionsByUser.remove([session.userId, hash]);
    },
    /** A person's sessions, with the hash each is stored under. */
    async sessionsOf(uid: string): Promise<Array<{ hash: string; session: SessionRecord }>> {
      const out: Array<{ hash: string; session: SessionRecord }> = [];
      for (const { key } of await t.sessionsByUser.scan([uid])) {
        const hash = String(key[1]);
        const session = await t.sessions.get(hash);
        if (session) out.push({ hash, session });
      }
      return out;
    },
    /** Removes a person's sessions that expired before `nowIso` (the index holds each expiry). */
    async removeExpiredSessionsOf(uid: string, nowIso: string): Promise<number> {
      let removed = 0;
      for (const { key, value } of await t.sessionsByUser.scan([uid])) {
        if (value > nowIso) continue;
        const hash = String(key[1]);
        await t.sessions.remove(hash);
        await t.sessionsByUser.remove([uid, hash]);
        removed += 1;
      }
      return removed;
    },
    /** Ends every session of a person. */
    async removeSessionsOf(uid: string): Promise<number> {
      let ended = 0;
      for (const { key } of await t.sessionsByUser.scan([uid])) {
        const hash = String(key[1]);
        await t.sessions.remove(hash);
        await t.sessionsByUser.remove([uid, hash]);
        ended += 1;
      }
      return ended;
    },
    /** Inside a write: ends the OAuth connections a person made in a workspace (oauth/connections.ts). */
    async endConnectionsOf(wid: string, uid: string, why: string, nowMs: number): Promise<number> {
      return (await endConnectionsInWrite(t, wid, { userId: uid }, why, nowMs)).length;
    },
    /** Inside a write: ends a person's chat identities in a workspace (chat/mappings.ts). */
    async endChatMappingsOf(wid: string, uid: string): Promise<number> {
      return endChatMappingsInWrite(t, wid, uid);
    },
  };
}

export type PeopleRepo = ReturnType<typeof peopleRepo>;
