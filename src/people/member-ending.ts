import {
  actorName,
  actorRole,
  lastOwner,
  noSuchMember,
  ownersOnly,
  type MemberActor,
  type MembersDeps,
} from './member-rules.js';

/**
 * A member's access ending, inside the caller's write: removed from the workspace, or their
 * access revoked while the membership stays. Either way every session of theirs ends (sessions
 * belong to the person, so this signs them out of every workspace), and the principal-ended
 * hooks end their grants in other domains (OAuth connections, chat identities, command-line
 * sign-ins) in the same write; recorded in the ledger naming the actor.
 */

/** Inside the caller's write: removes a member and ends every session and OAuth connection of theirs. */
export async function removeMemberInWrite(
  deps: MembersDeps,
  wid: string,
  uid: string,
  by: MemberActor,
): Promise<{ sessionsEnded: number; connectionsEnded: number }> {
  const { repo, clock, ledger, principalEnded } = deps;
  const member = await repo.getMember(wid, uid);
  if (!member) throw noSuchMember();
  const role = await actorRole(repo, wid, by);
  if (member.role === 'owner' && role !== 'owner') throw ownersOnly('remove an owner', role);
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
}

/** Inside the caller's write: ends a member's sessions and OAuth connections, keeping the membership. */
export async function revokeAccessInWrite(
  deps: MembersDeps,
  wid: string,
  uid: string,
  why: string,
  by: MemberActor,
): Promise<{ sessionsEnded: number; connectionsEnded: number }> {
  const { repo, clock, ledger, principalEnded } = deps;
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
}
