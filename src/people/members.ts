import type { Role, UserRecord } from './records.js';
import { addMember, type AddMemberInput } from './add-member.js';
import { removeMemberInWrite, revokeAccessInWrite } from './member-ending.js';
import {
  actorName,
  actorRole,
  lastOwner,
  noSuchMember,
  ownersOnly,
  toMemberView,
  type MemberActor,
  type MembersDeps,
  type MemberView,
  type Membership,
} from './member-rules.js';

/**
 * Members of a workspace (docs/console.md#members-and-two-factor).
 * Rules:
 * - Adding a member never tells whether the email already has an account on this server (in
 *   another workspace): the answer's status and shape are the same, it echoes the name and email
 *   given (the membership keeps them: this workspace knows the person by them), the work is the
 *   same (one argon2 hash, of the password sent or of a random one, and one write), and the
 *   ledger record is the same. What differs is only what the person finds:
 *   - an account already on this server keeps its own password (one sent here is never stored)
 *     and finds the workspace at its next request;
 *   - an email new to this server gets an account whose password is the one sent, which they
 *     must replace at first sign-in (a password someone else chose); sent without one, the
 *     account has a random password no one knows, until an operator sets one.
 * - Someone already a member is not added twice (400 naming email): that is this workspace's
 *   own list, which the adder reads anyway.
 * - Only an owner makes an owner (adding or promoting), and only an owner changes or removes an
 *   owner's membership: an admin cannot take a workspace from its owners.
 * - A workspace always keeps an owner: removing or demoting the last one is
 *   `409 second_owner_required` (another owner must exist first).
 * - Removing a member ends every session of theirs in the same transaction, so their very next
 *   request is 401; the person keeps their account (and other workspaces).
 * - The acting person's role is read again inside each write, so a change that raced a demotion
 *   of the actor does not commit; the owner count is read there too, so two owners demoting each
 *   other at once leave one.
 * - With a ledger, each change is recorded in the same transaction, naming the actor.
 *
 * The operations: adding (add-member.ts), removing and revoking access (member-ending.ts), what
 * they share (member-rules.ts); the list and a change of role or name here.
 */

export { toMemberView };
export type { AddMemberInput, MemberActor, MembersDeps, MemberView, Membership };
export type { MembersLedger } from './member-rules.js';

/**
 * A member as the members list shows them to owners and admins: also whether they have
 * two-factor on (confirmed) and, while they are locked out (lockouts.ts), until when.
 */
export interface MemberListView extends MemberView {
  twoFactor: boolean;
  /** The latest end of a lockout still in force (password or two-factor codes), or null. */
  lockedUntil: string | null;
}

/**
 * A workspace's members. Reads and writes memberships (`members`, `userWorkspaces`) and people
 * (`users`, for a new account), ends sessions, ends a leaving person's grants in other domains
 * (the principal-ended hooks), and records each change in the ledger when given one.
 */
export interface Members {
  /** A page of the workspace's members, in id order, with their two-factor and lockout state. */
  listMembers(
    wid: string,
    options: { after?: string; limit: number },
  ): Promise<{ data: MemberListView[]; next: string | null }>;
  /**
   * Adds a person to a workspace, creating their account when the email is new to this server,
   * and answering the same either way (the rules above).
   */
  addMember(input: AddMemberInput, by?: MemberActor): Promise<MemberView>;
  /** Changes a member's role, or the person's name in this workspace. */
  updateMember(wid: string, uid: string, change: { role?: Role; name?: string }, by: MemberActor): Promise<MemberView>;
  /** Removes a member and ends every session and OAuth connection of theirs at once. */
  removeMember(wid: string, uid: string, by: MemberActor): Promise<{ sessionsEnded: number }>;
  /** Inside the caller's write: removeMember's work, answering the connections ended too. */
  removeMemberInWrite(
    wid: string,
    uid: string,
    by: MemberActor,
  ): Promise<{ sessionsEnded: number; connectionsEnded: number }>;
  /**
   * Ends every session of a member (sessions belong to the person, so this signs them out of
   * every workspace) and the OAuth connections they made in this workspace, keeping the
   * membership; recorded as `member.access_revoked` with `why`.
   */
  revokeAccess(
    wid: string,
    uid: string,
    why: string,
    by: MemberActor,
  ): Promise<{ sessionsEnded: number; connectionsEnded: number }>;
  /** Inside the caller's write: revokeAccess's work. */
  revokeAccessInWrite(
    wid: string,
    uid: string,
    why: string,
    by: MemberActor,
  ): Promise<{ sessionsEnded: number; connectionsEnded: number }>;
  /** The member's role now (read inside the caller's write when called there), or undefined. */
  roleOf(wid: string, uid: string): Promise<Role | undefined>;
}

type LockedAccount = UserRecord & { attempts?: Record<string, { lockedUntil: string | null } | undefined> };

function listView(member: Membership, user: LockedAccount, nowMs: number): MemberListView {
  const locks = Object.values(user.attempts ?? {})
    .map((a) => a?.lockedUntil ?? null)
    .filter((at): at is string => at !== null && Date.parse(at) > nowMs)
    .sort();
  return {
    ...toMemberView(member, user),
    twoFactor: Boolean(user.totp?.confirmedAt),
    lockedUntil: locks.length > 0 ? locks[locks.length - 1]! : null,
  };
}

/** Changes a member's role or name, inside one write that reads the actor's role and the owner count again. */
async function updateMember(
  deps: MembersDeps,
  wid: string,
  uid: string,
  change: { role?: Role; name?: string },
  by: MemberActor,
): Promise<MemberView> {
  const { store, repo, ledger } = deps;
  return store.write(async () => {
    const member = await repo.getMember(wid, uid);
    const user = await repo.getUser(uid);
    if (!member || !user) throw noSuchMember();
    const role = await actorRole(repo, wid, by);
    if (member.role === 'owner' && role !== 'owner') throw ownersOnly('change an owner', role);
    if (change.role === 'owner' && member.role !== 'owner' && role !== 'owner')
      throw ownersOnly('make someone an owner', role);
    if (
      member.role === 'owner' &&
      change.role !== undefined &&
      change.role !== 'owner' &&
      (await repo.ownerCount(wid)) <= 1
    )
      throw lastOwner('demoted');
    // A new name is this workspace's name for the person (their membership): another
    // workspace they belong to, and their own account, keep theirs.
    const updated: Membership = {
      ...member,
      role: change.role ?? member.role,
      ...(change.name === undefined ? {} : { name: change.name }),
    };
    if (updated.role !== member.role || change.name !== undefined) await repo.putMember(updated);
    await ledger?.record({
      workspaceId: wid,
      actor: actorName(by),
      kind: 'member.updated',
      subject: uid,
      data: { ...change },
    });
    return toMemberView(updated, user);
  });
}

export function createMembers(deps: MembersDeps): Members {
  const { store, clock, repo } = deps;
  return {
    async listMembers(wid, options) {
      const rows = await repo.listMembers(wid, { ...options, limit: options.limit + 1 });
      const page = rows.slice(0, options.limit);
      const users = await Promise.all(page.map((member) => repo.getUser(member.userId)));
      const data: MemberListView[] = [];
      const now = clock.now();
      page.forEach((member, i) => {
        const user = users[i];
        if (user) data.push(listView(member, user, now));
      });
      return { data, next: rows.length > options.limit ? page[page.length - 1]!.userId : null };
    },
    addMember: (input, by) => addMember(deps, input, by),
    updateMember: (wid, uid, change, by) => updateMember(deps, wid, uid, change, by),
    async removeMember(wid, uid, by) {
      return store.write(async () => ({
        sessionsEnded: (await removeMemberInWrite(deps, wid, uid, by)).sessionsEnded,
      }));
    },
    removeMemberInWrite: (wid, uid, by) => removeMemberInWrite(deps, wid, uid, by),
    revokeAccess: (wid, uid, why, by) => store.write(() => revokeAccessInWrite(deps, wid, uid, why, by)),
    revokeAccessInWrite: (wid, uid, why, by) => revokeAccessInWrite(deps, wid, uid, why, by),
    roleOf: (wid, uid) => repo.roleIn(wid, uid),
  };
}
