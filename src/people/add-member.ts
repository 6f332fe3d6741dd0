import { randomBytes } from 'node:crypto';
import { isoAt } from '../lib/clock.js';
import type { Role } from './records.js';
import { hashPassword } from './passwords.js';
import {
  actorName,
  actorRole,
  alreadyMember,
  ownersOnly,
  toMemberView,
  type MemberActor,
  type MembersDeps,
  type MemberView,
  type Membership,
} from './member-rules.js';

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
 * Adds a person to a workspace, creating their account when the email is new to this server,
 * and answering the same either way (members.ts's rules): the same work (one argon2 hash, of the
 * password sent or of a random one, and one write) and the same ledger record.
 */
export async function addMember(deps: MembersDeps, input: AddMemberInput, by?: MemberActor): Promise<MemberView> {
  const { store, clock, ids, repo, ledger } = deps;
  const email = input.email.trim();
  const name = input.name ?? email.split('@')[0]!;
  const existing = await repo.userByEmail(email);
  if (existing && (await repo.getMember(input.workspaceId, existing.id))) throw alreadyMember(email);
  // The same work whatever the email: one hash, of the password sent or of one nobody knows.
  const passwordHash = await hashPassword(input.password ?? randomBytes(32).toString('base64url'));
  const at = isoAt(clock.now());
  const wid = input.workspaceId;
  return store.write(async () => {
    const role = await actorRole(repo, wid, by);
    if (input.role === 'owner' && role !== 'owner') throw ownersOnly('make someone an owner', role);
    let user = await repo.userByEmail(email);
    if (user && (await repo.getMember(wid, user.id))) throw alreadyMember(email);
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
}
