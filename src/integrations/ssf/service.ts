import { AppError } from '../../errors/app-error.js';
import type { Ledger } from '../../ledger/service.js';
import type { PeopleService } from '../../people/index.js';
import type { Store } from '../../store/index.js';
import type { Once } from '../once.js';
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
 * - `account-disabled` (RISC): the same, and a non-owner's membership of this workspace is removed
 *   by the members' own path. An owner's membership is never removed by an identity provider
 *   (an admin can configure one, and must not gain an owner's reach through it): their sessions
 *   and connections end, and the ledger says the membership was kept and why.
 * - The token's `jti` is claimed in the same write as the effects and their ledger records.
 * - An unknown event type, or a subject that is no member here, changes nothing; the event is
 *   still accepted (the transmitter can do nothing better with it) and recorded as ignored, without
 *   the email of a subject who is not a member.
 * - Each event is recorded as `ssf.<event>` (or `ssf.event_ignored`), besides the members'
 *   own records (`member.access_revoked`, `member.removed`), actor `ssf`.
 */
export const SESSION_REVOKED = 'https://schemas.openid.net/secevent/caep/event-type/session-revoked';
export const CREDENTIAL_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/credential-change';
export const ACCOUNT_DISABLED = 'https://schemas.openid.net/secevent/risc/event-type/account-disabled';
const KIND: Record<string, string> = {
  [SESSION_REVOKED]: 'ssf.session_revoked',
  [CREDENTIAL_CHANGE]: 'ssf.credential_change',
  [ACCOUNT_DISABLED]: 'ssf.account_disabled',
};
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

/**
 * The identity provider's security events (the rules above). Claims each token's `jti` (once.ts),
 * ends people's access or membership through the people service, and records each event.
 */
export interface Ssf {
  /**
   * Acts on each event of one verified token, in one write with the claim of its `jti`: the
   * claim, every effect and every ledger record land together or not at all, so a failure
   * leaves the token unclaimed (the transmitter's retry is acted on) and nothing half-applied.
   */
  handle(set: VerifiedSet): Promise<void>;
}

export function createSsf(deps: { store: Store; ledger: Ledger; people: PeopleService; once: Once }): Ssf {
  const { store, ledger, people, once } = deps;

  /**
   * Inside the write: ends the person's access; for account-disabled, a non-owner's membership
   * too. An owner's membership is never removed by an identity provider (whoever configures one
   * could otherwise remove owners with keys of their own): their sessions and connections end and
   * the record says why the membership was kept.
   */
  const act = async (wid: string, uid: string, type: string): Promise<Record<string, unknown>> => {
    const why = `identity provider: ${type === ACCOUNT_DISABLED ? 'account disabled' : type === SESSION_REVOKED ? 'session revoked' : 'credential changed'}`;
    if (type === ACCOUNT_DISABLED) {
      if ((await people.roleOf(wid, uid)) === 'owner') {
        return {
          userId: uid,
          membershipRemoved: false,
          membershipKept: "an identity provider never removes an owner's membership; another owner must",
          ...(await people.revokeAccessInWrite(wid, uid, why, ACTOR)),
        };
      }
      return { userId: uid, membershipRemoved: true, ...(await people.removeMemberInWrite(wid, uid, ACTOR)) };
    }
    return { userId: uid, ...(await people.revokeAccessInWrite(wid, uid, why, ACTOR)) };
  };

  return {
    async handle(set: VerifiedSet): Promise<void> {
      const { workspaceId: wid, claims, claimUntil } = set;
      const base = { jti: claims.jti, iss: claims.iss ?? null };
      await store.write(async () => {
        // Two deliveries of one token racing past the verifier's read-only check: one wins here.
        if (!(await once.claim(`ssf:${wid}`, claims.jti, claimUntil))) {
          throw new AppError('unauthenticated', {
            message: 'This token (its jti) was already received; each is accepted once.',
            fix: 'Send every event in a new token with a new jti.',
          });
        }
        for (const [type, payload] of Object.entries(claims.events)) {
          const kind = KIND[type];
          const email =
            emailOf((claims as Record<string, unknown>).sub_id) ??
            emailOf((payload as Record<string, unknown> | null)?.subject);
          // Read inside the write: a person who left meanwhile is no member any more.
          const uid = email ? await people.memberIdByEmail(wid, email) : undefined;
          if (!kind || !uid) {
            await ledger.record({
              workspaceId: wid,
              actor: ACTOR.system,
              kind: 'ssf.event_ignored',
              subject: claims.jti,
              data: {
                ...base,
                event: type,
                reason: !kind
                  ? 'event type not acted on'
                  : email
                    ? 'subject is not a member of this workspace'
                    : 'no email subject',
              },
            });
            continue;
          }
          const acted = await act(wid, uid, type);
          await ledger.record({
            workspaceId: wid,
            actor: ACTOR.system,
            kind,
            subject: claims.jti,
            data: { ...base, event: type, ...acted },
          });
        }
      });
    },
  };
}
