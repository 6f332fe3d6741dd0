import { AppError, invalidField } from '../errors/app-error.js';
import type { Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import type { PrincipalEnded } from '../lib/principal-ended.js';
import type { Store } from '../store/index.js';
import type { MemberRecord, Role, UserRecord } from './records.js';
import type { PeopleRepo } from './repo.js';

/**
 * What the members' operations share (members.ts, add-member.ts, member-ending.ts): who acts and
 * with which role, a member as the workspace shows them, and the refusals worded once.
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

export interface MembersDeps {
  store: Store;
  clock: Clock;
  ids: IdSource;
  repo: PeopleRepo;
  ledger?: MembersLedger | undefined;
  principalEnded: PrincipalEnded;
}

/**
 * A membership as stored: the name and email it was added under, when it was (members added
 * before this have none, and show the person's own). Declared here, beside its reader, rather
 * than in records.ts: optional members, so older records read as they are.
 */
export type Membership = MemberRecord & { name?: string; email?: string };

/** The person as this workspace knows them: the name and email of the membership, else their own. */
export function toMemberView(member: Membership, user: UserRecord): MemberView {
  return {
    id: user.id,
    email: member.email ?? user.email,
    name: member.name ?? user.name,
    role: member.role,
    addedAt: member.addedAt,
  };
}

/** The actor as the ledger names it. */
export const actorName = (by: MemberActor | undefined) =>
  !by ? 'system' : 'userId' in by ? `user:${by.userId}` : by.system;

/**
 * The actor's role now, inside the write. Setup outside any route (no actor) acts as an owner; a
 * system actor (an identity provider) as an admin: whoever can configure one must not gain an
 * owner's reach through it, so it never removes, demotes or makes an owner.
 */
export const actorRole = async (
  repo: PeopleRepo,
  wid: string,
  by: MemberActor | undefined,
): Promise<Role | undefined> => (!by ? 'owner' : 'userId' in by ? repo.roleIn(wid, by.userId) : 'admin');

export function noSuchMember(): AppError {
  return new AppError('not_found', { message: 'No such member in this workspace.' });
}

export function alreadyMember(email: string): AppError {
  return invalidField('email', `"email" ${email} is already a member of this workspace`);
}

export function lastOwner(what: 'removed' | 'demoted'): AppError {
  return new AppError('second_owner_required', {
    message: `The workspace's last owner cannot be ${what}: another owner must exist first.`,
    fix: 'Add or promote another person to owner first, then retry.',
  });
}

export function ownersOnly(action: string, role: Role | undefined): AppError {
  return new AppError('forbidden', {
    message: `Only an owner may ${action}; you are ${role ?? 'not a member'}.`,
    fix: 'Ask an owner of this workspace to do it.',
  });
}
