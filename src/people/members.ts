import { randomBytes } from 'node:crypto';
import { AppError, invalidField } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import type { Store } from '../store/index.js';
import type { MemberRecord, Role, UserRecord } from './records.js';
import { hashPassword } from './passwords.js';
import type { PeopleRepo } from './repo.js';
import type { PrincipalEnded } from '../lib/principal-ended.js';

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
 */

export interface MemberView {
  id: string;
  email: string;
  name: string;
  role: Role;
  addedAt: string;
}

/**
 * Who acts: a signed-in person (user:usr_…), or a verified machine acting for the workspace (an
 * identity provider's security event: `system` names it in the ledger, and it acts as an admin
 * would: never on an owner's membership), or, for setup outside any route, nobody.
 */
export type MemberActor = { userId: string } | { system: string };

/** The part of the ledger the members need (records inside the caller's transaction). */
export interface MembersLedger {
  record(event: {
    workspaceId: string;
    actor: string;
    kind: string;
    subject: string;
    data: Record<string, unknown>;
  }): unknown;
}

export interface AddMemberInput {
  workspaceId: string;
  email: string;
  name?: string;
  /**
   * The first password of an account the email does not have yet (to be replaced at first
   * sign-in when a person chose it); ignored, never stored, for an account already here.
   */
  password?: string;
  role: Role;
}

/**
 * A membership as stored: the name and email it was added under, when it was (members added
 * before this have none, and show the person's own). Declared here, beside its reader, rather
 * than in records.ts: optional members, so older records read as they are.
 */
export type Membership = MemberRecord & { name?: string; email?: string };

/** The person as this workspace knows them: the name and email of the membership, else their own. */
/**
 * A member as the members list shows them to owners and admins: also whether they have
 * two-factor on (confirmed) and, while they are locked out (lockouts.ts), until when.
 */
export interface MemberListView extends MemberView {
  twoFactor: boolean;
  /** The latest end of a lockout still in force (password or two-factor codes), or null. */
  lockedUntil: string | null;
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

export function toMemberView(member: Membership, user: UserRecord): MemberView {
  return {
    id: user.id,
    email: member.email ?? user.email,
    name: member.name ?? user.name,
    role: member.role,
    addedAt: member.addedAt,
  };
}

function noSuchMember(): AppError {
  return new AppError('not_found', { message: 'No such member in this workspace.' });
}

function alreadyMember(_user: UserRecord, email: string): AppError {
  return invalidField('email', `"email" ${email} is already a member of this workspace`);
}

function lastOwner(what: 'removed' | 'demoted'): AppError {
  return new AppError('second_owner_required', {
    message: `The workspace's last owner cannot be ${what}: another owner must exist first.`,
    fix: 'Add or promote another person to owner first, then retry.',
  });
}

function ownersOnly(action: string, role: Role | undefined): AppError {
  return new AppError('forbidden', {
    message: `Only an owner may ${action}; you are ${role ?? 'not a member'}.`,
    fix: 'Ask an owner of this workspace to do it.',
  });
}

export function createMembers(deps: {
  store: Store;
  clock: Clock;
  ids: IdSource;
  repo: PeopleRepo;
  ledger?: MembersLedger | undefined;
  principalEnded: PrincipalEnded;
}) {
  const { store, clock, ids, repo, ledger, principalEnded } = deps;
  const actorName = (by: MemberActor | undefined) =>
    !by ? 'system' : 'userId' in by ? `user:${by.userId}` : by.system;
  /**
   * The actor's role now, inside the write. Setup outside any route (no actor) acts as an owner; a
   * system actor (an identity provider) as an admin: whoever can configure one must not gain an
   * owner's reach through it, so it never removes, demotes or makes an owner.
   */
  const roleOf = async (wid: string, by: MemberActor | undefined): Promise<Role | undefined> =>
    !by ? 'owner' : 'userId' in by ? repo.roleIn(wid, by.userId) : 'admin';

  /** Inside the caller's write: removes a member and ends every session and OAuth connection of theirs. */
  const removeMemberInWrite = async (
    wid: string,
    uid: string,
    by: MemberActor,
  ): Promise<{ sessionsEnded: number; connectionsEnded: number }> => {
    const member = await repo.getMember(wid, uid);
    if (!member) throw noSuchMember();
    const actorRole = await roleOf(wid, by);
    if (member.role === 'owner' && actorRole !== 'owner') throw ownersOnly('remove an owner', actorRole);
    if (member.role === 'owner' && (await repo.ownerCount(wid)) <= 1) throw lastOwner('removed');
    await repo.removeMember(wid, uid);
    const sessionsEnded = await repo.removeSessionsOf(uid);
    // The MCP clients they connected stop with them (their OAuth connections end).
    const { connectionsEnded, chatMappingsEnded } = await principalEnded.person(
      wid,
      uid,
      'person left the workspace',
      clock.now(),
    );
    await ledger?.record({
      workspaceId: wid,
      actor: actorName(by),
      kind: 'member.removed',
      subject: uid,
      data: {
        role: member.role,
        sessionsEnded,
        connectionsEnded,
        ...(chatMappingsEnded > 0 ? { chatMappingsEnded } : {}),
      },
    });
    return { sessionsEnded, connectionsEnded };
  };

  /** Inside the caller's write: ends a member's sessions and OAuth connections, keeping the membership. */
  const revokeAccessInWrite = async (
    wid: string,
    uid: string,
    why: string,
    by: MemberActor,
  ): Promise<{ sessionsEnded: number; connectionsEnded: number }> => {
    if (!(await repo.getMember(wid, uid))) throw noSuchMember();
    const sessionsEnded = await repo.removeSessionsOf(uid);
    // Their chat identities stop speaking for them too: a chat account may be what was compromised.
    const { connectionsEnded, chatMappingsEnded } = await principalEnded.person(wid, uid, why, clock.now());
    await ledger?.record({
      workspaceId: wid,
      actor: actorName(by),
      kind: 'member.access_revoked',
      subject: uid,
      data: { why, sessionsEnded, connectionsEnded, chatMappingsEnded },
    });
    return { sessionsEnded, connectionsEnded };
  };

  return {
    async listMembers(
      wid: string,
      options: { after?: string; limit: number },
    ): Promise<{ data: MemberListView[]; next: string | null }> {
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

    /**
     * Adds a person to a workspace, creating their account when the email is new to this server,
     * and answering the same either way (the rules above).
     */
    async addMember(input: AddMemberInput, by?: MemberActor): Promise<MemberView> {
      const email = input.email.trim();
      const name = input.name ?? email.split('@')[0]!;
      const existing = await repo.userByEmail(email);
      if (existing && (await repo.getMember(input.workspaceId, existing.id))) throw alreadyMember(existing, email);
      // The same work whatever the email: one hash, of the password sent or of one nobody knows.
      const passwordHash = await hashPassword(input.password ?? randomBytes(32).toString('base64url'));
      const at = isoAt(clock.now());
      const wid = input.workspaceId;
      return store.write(async () => {
        const actorRole = await roleOf(wid, by);
        if (input.role === 'owner' && actorRole !== 'owner') throw ownersOnly('make someone an owner', actorRole);
        let user = await repo.userByEmail(email);
        if (user && (await repo.getMember(wid, user.id))) throw alreadyMember(user, email);
        if (!user) {
          // A password someone chose for another (in the console), or one nobody knows: replaced
          // before anything else. The operator's own path (no `by`: CLI, set-up) sets a real one.
          user = {
            id: ids.id('usr'),
            email,
            name,
            passwordHash,
            ...(by || input.password === undefined ? { mustChangePassword: true } : {}),
            createdAt: at,
          };
          await repo.putUser(user);
        }
        // An account already here keeps its own password: the hash above is dropped unused.
        const member: Membership = { workspaceId: wid, userId: user.id, role: input.role, addedAt: at, name, email };
        await repo.putMember(member);
        await ledger?.record({
          workspaceId: wid,
          actor: actorName(by),
          kind: 'member.added',
          subject: user.id,
          data: { role: input.role },
        });
        return toMemberView(member, user);
      });
    },

    /** Changes a member's role, or the person's name. */
    async updateMember(
      wid: string,
      uid: string,
      change: { role?: Role; name?: string },
      by: MemberActor,
    ): Promise<MemberView> {
      return store.write(async () => {
        const member = await repo.getMember(wid, uid);
        const user = await repo.getUser(uid);
        if (!member || !user) throw noSuchMember();
        const actorRole = await roleOf(wid, by);
        if (member.role === 'owner' && actorRole !== 'owner') throw ownersOnly('change an owner', actorRole);
        if (change.role === 'owner' && member.role !== 'owner' && actorRole !== 'owner')
          throw ownersOnly('make someone an owner', actorRole);
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
    },

    /** Removes a member and ends every session and OAuth connection of theirs at once. */
    async removeMember(wid: string, uid: string, by: MemberActor): Promise<{ sessionsEnded: number }> {
      return store.write(async () => ({ sessionsEnded: (await removeMemberInWrite(wid, uid, by)).sessionsEnded }));
    },

    removeMemberInWrite,

    /**
     * Ends every session of a member (sessions belong to the person, so this signs them out of
     * every workspace) and the OAuth connections they made in this workspace, keeping the
     * membership; recorded as `member.access_revoked` with `why`.
     */
    async revokeAccess(
      wid: string,
      uid: string,
      why: string,
      by: MemberActor,
    ): Promise<{ sessionsEnded: number; connectionsEnded: number }> {
      return store.write(() => revokeAccessInWrite(wid, uid, why, by));
    },

    revokeAccessInWrite,

    /** The member's role now (read inside the caller's write when called there), or undefined. */
    roleOf(wid: string, uid: string): Promise<Role | undefined> {
      return repo.roleIn(wid, uid);
    },
  };
}
