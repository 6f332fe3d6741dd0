import type { MemberRecord, Role, SessionRecord, Store, UserRecord, WorkspaceRecord } from '../store/index.js';

/** Reads and writes of workspaces, people, memberships and sessions. Writes go inside store.write(). */
export function peopleRepo(store: Store) {
  const t = store.tables;
  return {
    workspaceCount(): number {
      return t.workspaces.scan([], { limit: 1 }).length;
    },
    getWorkspace(wid: string): WorkspaceRecord | undefined {
      return t.workspaces.get(wid);
    },
    putWorkspace(ws: WorkspaceRecord): void {
      t.workspaces.put(ws.id, ws);
    },
    userByEmail(email: string): UserRecord | undefined {
      const uid = t.usersByEmail.get(email.trim().toLowerCase());
      return uid === undefined ? undefined : t.users.get(uid);
    },
    getUser(uid: string): UserRecord | undefined {
      return t.users.get(uid);
    },
    putUser(user: UserRecord): void {
      t.users.put(user.id, user);
      t.usersByEmail.put(user.email.trim().toLowerCase(), user.id);
    },
    putMember(member: MemberRecord): void {
      t.members.put([member.workspaceId, member.userId], member);
      t.userWorkspaces.put([member.userId, member.workspaceId], member.role);
    },
    roleIn(wid: string, uid: string): Role | undefined {
      return t.members.get([wid, uid])?.role;
    },
    getMember(wid: string, uid: string): MemberRecord | undefined {
      return t.members.get([wid, uid]);
    },
    /** A workspace's memberships in user id order, from after `after` (a user id). */
    listMembers(wid: string, options: { after?: string; limit?: number }): MemberRecord[] {
      return t.members.scan([wid], options).map((e) => e.value);
    },
    removeMember(wid: string, uid: string): void {
      t.members.remove([wid, uid]);
      t.userWorkspaces.remove([uid, wid]);
    },
    /** How many owners a workspace has (a scan of its memberships: workspaces are small). */
    ownerCount(wid: string): number {
      let owners = 0;
      for (const { value } of t.members.scan([wid])) if (value.role === 'owner') owners += 1;
      return owners;
    },
    workspacesOf(uid: string): Array<{ workspace: WorkspaceRecord; role: Role }> {
      const out: Array<{ workspace: WorkspaceRecord; role: Role }> = [];
      for (const { key, value } of t.userWorkspaces.scan([uid])) {
        const workspace = t.workspaces.get(String(key[1]));
        if (workspace) out.push({ workspace, role: value });
      }
      return out;
    },
    getSession(hash: string): SessionRecord | undefined {
      return t.sessions.get(hash);
    },
    putSession(hash: string, session: SessionRecord): void {
      t.sessions.put(hash, session);
      t.sessionsByUser.put([session.userId, hash], session.expiresAt);
    },
    removeSession(hash: string): void {
      const session = t.sessions.get(hash);
      t.sessions.remove(hash);
      if (session) t.sessionsByUser.remove([session.userId, hash]);
    },
    /** Removes a person's sessions that expired before `nowIso` (the index holds each expiry). */
    removeExpiredSessionsOf(uid: string, nowIso: string): number {
      let removed = 0;
      for (const { key, value } of t.sessionsByUser.scan([uid])) {
        if (value > nowIso) continue;
        const hash = String(key[1]);
        t.sessions.remove(hash);
        t.sessionsByUser.remove([uid, hash]);
        removed += 1;
      }
      return removed;
    },
    /** Ends every session of a person. */
    removeSessionsOf(uid: string): number {
      let ended = 0;
      for (const { key } of t.sessionsByUser.scan([uid])) {
        const hash = String(key[1]);
        t.sessions.remove(hash);
        t.sessionsByUser.remove([uid, hash]);
        ended += 1;
      }
      return ended;
    },
  };
}

export type PeopleRepo = ReturnType<typeof peopleRepo>;
