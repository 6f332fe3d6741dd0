import { AppError } from '../../errors/app-error.js';
import type { Ledger } from '../../ledger/service.js';
import type { PeopleService } from '../../people/index.js';
import type { Store } from '../../store/index.js';
import type { VerifiedSet } from './verifier.js';

/**
 * The identity provider's security events (Shared Signals: CAEP and RISC), once verifier.ts
 * accepted the token.
 * Rules:
 * - The subject is a person named by email: the token's `sub_id`, else the event's `subject`
 *   (format `email`, or the older `subject_type: email`; a `complex` subject's `user`). Only a
 *   member of this workspace is acted on: one workspace's identity provider never reaches a
 *   person who is not its member.
 * - `session-revoked` and `credential-change` (CAEP): every console session of the person ends
 *   (sessions belong to the person, so they are signed out of every workspace) and the OAuth
 *   connections they made in this workspace end.
 * - `account-disabled` (RISC): the same, and their membership of this workspace is removed by
 *   the members' own path. The last owner is not removed (a workspace always keeps an owner, and
 *   only a person can hand it over): their sessions and connections end, and the ledger says the
 *   membership was kept and why.
 * - An unknown event type, or a subject that is no member here, changes nothing; the event is
 *   still accepted (the transmitter can do nothing better with it) and recorded as ignored, without
 *   the email of a subject who is not a member.
 * - Each event is recorded as `ssf.<event>` (or `ssf.event_ignored`), besides the members'
 *   own records (`member.access_revoked`, `member.removed`), actor `ssf`.
 */
export const SESSION_REVOKED = 'https://schemas.openid.net/secevent/caep/event-type/session-revoked';
export const CREDENTIAL_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/credential-change';
export const ACCOUNT_DISABLED = 'https://schemas.openid.net/secevent/risc/event-type/account-disabled';
const KIND: Record<string, string> = { [SESSION_REVOKED]: 'ssf.session_revoked', [CREDENTIAL_CHANGE]: 'ssf.credential_change', [ACCOUNT_DISABLED]: 'ssf.account_disabled' };
const ACTOR = { system: 'ssf' };

/** The email a subject identifier names, if it names one. */
export function emailOf(subject: unknown): string | undefined {
  if (!subject || typeof subject !== 'object') return undefined;
  const s = subject as Record<string, unknown>;
  const format = s.format ?? s.subject_type;
  if (format === 'email' && typeof s.email === 'string' && s.email.length <= 320) return s.email;
  if (format === 'complex') return emailOf(s.user);
  return undefined;
}

export function createSsf(deps: { store: Store; ledger: Ledger; people: PeopleService }) {
  const { store, ledger, people } = deps;

  const record = (wid: string, kind: string, jti: string, data: Record<string, unknown>) =>
    store.write(() => { ledger.record({ workspaceId: wid, actor: ACTOR.system, kind, subject: jti, data }); });

  /** Ends the person's access; for account-disabled, their membership too (unless they are the last owner). */
  const act = async (wid: string, uid: string, type: string): Promise<Record<string, unknown>> => {
    const why = `identity provider: ${type === ACCOUNT_DISABLED ? 'account disabled' : type === SESSION_REVOKED ? 'session revoked' : 'credential changed'}`;
    if (type === ACCOUNT_DISABLED) {
      try {
        const { sessionsEnded } = await people.removeMember(wid, uid, ACTOR);
        return { userId: uid, membershipRemoved: true, sessionsEnded };
      } catch (err) {
        if (!(err instanceof AppError) || err.type !== 'second_owner_required') throw err;
        const ended = await people.revokeAccess(wid, uid, why, ACTOR);
        return { userId: uid, membershipRemoved: false, membershipKept: 'the workspace\'s last owner is never removed by an identity provider', ...ended };
      }
    }
    return { userId: uid, ...await people.revokeAccess(wid, uid, why, ACTOR) };
  };

  return {
    /** Acts on each event of one verified token. */
    async handle(set: VerifiedSet): Promise<void> {
      const { workspaceId: wid, claims } = set;
      const base = { jti: claims.jti, iss: claims.iss ?? null };
      for (const [type, payload] of Object.entries(claims.events)) {
        const kind = KIND[type];
        const email = emailOf((claims as Record<string, unknown>).sub_id) ?? emailOf((payload as Record<string, unknown> | null)?.subject);
        const uid = email ? people.memberIdByEmail(wid, email) : undefined;
        if (!kind || !uid) {
          await record(wid, 'ssf.event_ignored', claims.jti, { ...base, event: type, reason: !kind ? 'event type not acted on' : email ? 'subject is not a member of this workspace' : 'no email subject' });
          continue;
        }
        let outcome: Record<string, unknown>;
        try {
          outcome = await act(wid, uid, type);
        } catch (err) {
          // The member left meanwhile: nothing is left to end.
          if (!(err instanceof AppError) || err.type !== 'not_found') throw err;
          outcome = { userId: uid, reason: 'no longer a member' };
        }
        await record(wid, kind, claims.jti, { ...base, event: type, ...outcome });
      }
    },
  };
}

export type Ssf = ReturnType<typeof createSsf>;
