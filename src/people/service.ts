import { AppError } from '../errors/app-error.js';
import type { Clock } from '../lib/clock.js';
import { isId, type IdSource } from '../lib/ids.js';
import { deriveKey } from '../lib/seal.js';
import type { PrincipalEnded } from '../lib/principal-ended.js';
import type { Store } from '../store/index.js';
import type { Role } from './records.js';
import type { PeopleContext } from './context.js';
import { createLockouts, type LockKind, type LockoutPolicy } from './lockouts.js';
import { createMembers, type Members, type MembersLedger } from './members.js';
import type { Permission } from './permissions.js';
import { createRecovery, type OwnerPasswordReset } from './recovery.js';
import { peopleRepo } from './repo.js';
import { endSessions, sessionUser, sessionsOf, signOut } from './sessions.js';
import { changePassword, signIn, type SignedIn } from './sign-in.js';
import { confirmTotp, disableTotp, replaceRecoveryCodes, startTotp } from './two-factor-enrolment.js';
import { toPublicUser, type PublicUser, type SessionView, type WorkspaceView } from './views.js';
import { authorize, createAnotherWorkspace, createWorkspace, workspacesOf, type NewWorkspace } from './workspaces.js';

/**
 * Rules:
 * - A wrong email and a wrong password give the same error after the same work (argon2 verify).
 * - A session is a 256-bit random secret in the cookie; the store keeps only its hash.
 * - A session ends at its expiry or at sign-out, checked on every request against the store.
 * - A workspace the person is not a member of is "not found", never "forbidden".
 * - A password change needs the current password, and ends every session of that person (the
 *   changing one is replaced by a fresh one).
 * - A sign-in or a change whose password check raced a change does not commit.
 * - Until a person replaces a password someone else chose, no workspace permission holds.
 * - With two-factor on, sign-in needs a code too, asked only once the password was right (a wrong
 *   password answers exactly as before): a missing, wrong or already used code is
 *   `401 totp_required`. A code is used once: the step it was accepted at is stored with the
 *   session, in one transaction, so two sign-ins racing with one code make one session.
 * - Two-factor is on only after a code confirms the enrolment; turning it off needs a code.
 *   Starting an enrolment while it is on is refused (a stolen session cannot swap the secret).
 * - Wrong current passwords (on a change) and wrong two-factor codes are counted per account and
 *   lock the account for that kind after too many in a row (lockouts.ts); wrong answers say how
 *   many attempts are left (`attemptsLeft`). A sign-in without a code is not an attempt at one.
 * - Members: see members.ts; the operator's reset of an owner's password: recovery.ts.
 *
 * The operations, one file each: workspaces and the permission check (workspaces.ts), signing in
 * and changing a password (sign-in.ts), sessions (sessions.ts), turning two-factor on and off
 * (two-factor-enrolment.ts), members (members.ts), lockouts (lockouts.ts).
 */

/** The least a new password may be (NIST SP 800-63B asks at least 8; an operator's console, 12). */
export const MIN_PASSWORD_LENGTH = 12;

export { toPublicUser, type PublicUser, type SessionView, type WorkspaceView };
export type { NewWorkspace, SignedIn };

export interface PeopleDeps {
  store: Store;
  clock: Clock;
  ids: IdSource;
  sessionTtlMs: number;
  /** Seals secrets that cannot be hashed (two-factor secrets). */
  masterKey: Buffer;
  /** Records membership changes, when given. */
  ledger?: MembersLedger;
  /** Per-account lockouts (settings `lockout`); by default 5 in a row, 15 minutes doubling to a day. */
  lockout?: LockoutPolicy;
  /** What ends with a person's membership in other domains (OAuth connections, chat identities). */
  principalEnded: PrincipalEnded;
}

export const DEFAULT_LOCKOUT: LockoutPolicy = { maxFailures: 5, baseMs: 15 * 60_000, maxMs: 86_400_000 };

/**
 * People, their workspaces and their console sessions. Reads and writes workspaces, people
 * (`users`: password hashes, sealed two-factor secrets, recovery codes' hashes, lockout counts),
 * memberships (`members`, `userWorkspaces`) and sessions (by their secret's hash); records
 * membership changes, lockouts and new workspaces in the ledger when given one; ends a person's
 * grants in other domains through the principal-ended hooks.
 */
export interface People extends Members {
  /** How many workspaces the store has. */
  workspaceCount(): Promise<number>;
  /** Whether the workspace exists (workspaces are never removed); `wid` may be any text from outside. */
  workspaceExists(wid: string): Promise<boolean>;
  /** The id of the person with this email who is a member of the workspace, if any. */
  memberIdByEmail(wid: string, email: string): Promise<string | undefined>;
  /**
   * Creates a workspace with its owner (workspaces.ts). `firstOnly`: only if the store has no
   * workspace yet, decided inside the same transaction, so two first starts racing create one.
   */
  createWorkspace(input: NewWorkspace): Promise<{ workspaceId: string; ownerId: string }>;
  /** The operator's reset of an owner's password (recovery.ts): ends their sessions and sign-ins. */
  resetOwnerPassword(email: string, options?: { disableTwoFactor?: boolean }): Promise<OwnerPasswordReset>;
  /**
   * Signs a person in (sign-in.ts): the email, password and, with two-factor on, a code or a
   * recovery code, spent with the new session in one write. Answers the session's secret once.
   */
  signIn(email: string, password: string, totp?: string): Promise<SignedIn>;
  /** The person behind a session secret, or undefined when it is unknown or expired. */
  sessionUser(secret: string): Promise<PublicUser | undefined>;
  /**
   * Changes a person's password and ends every session of theirs, the one making the change
   * too, and their command-line sign-ins; the caller gets a new session secret in its place.
   */
  changePassword(
    uid: string,
    currentPassword: string,
    newPassword: string,
  ): Promise<{ sessionsEnded: number; secret: string }>;
  /**
   * Starts a two-factor enrolment (two-factor-enrolment.ts): a new secret, sealed in the store and
   * answered once, with its otpauth URI and that URI as a QR code (SVG).
   */
  startTotp(uid: string): Promise<{ secret: string; otpauthUri: string; qrSvg: string }>;
  /** A current code of the waiting enrolment turns two-factor on; the recovery codes, shown once. */
  confirmTotp(uid: string, code: string): Promise<{ totp: true; recoveryCodes: string[] }>;
  /** New recovery codes in place of all the old ones, for a current code; shown once. */
  replaceRecoveryCodes(uid: string, code: string): Promise<{ recoveryCodes: string[] }>;
  /** The person's own console sessions, newest first; `current` marks the one asking. */
  sessionsOf(uid: string, currentSecret: string): Promise<{ sessions: SessionView[] }>;
  /** Ends the person's other sessions, or the one named by `id`; never the one asking. */
  endSessions(uid: string, currentSecret: string, id?: string): Promise<{ sessionsEnded: number }>;
  /** Turns two-factor off (or drops a waiting enrolment); needs a current, unused code or a recovery code. */
  disableTotp(uid: string, code: string): Promise<{ totp: false }>;
  /** An owner lifts a member's lockouts (lockouts.ts); recorded in this workspace. */
  liftLockout(wid: string, uid: string, by: { userId: string }): Promise<{ userId: string; lifted: LockKind[] }>;
  /** Ends the session of this secret. */
  signOut(secret: string): Promise<void>;
  /** The person and their workspaces; `unauthenticated` when the person is gone. */
  me(uid: string): Promise<{ user: PublicUser; workspaces: WorkspaceView[] }>;
  /**
   * Another workspace, made by a person who owns one already (`POST /api/workspaces`,
   * `svc workspaces create`): they are its owner, and nothing else is shared with the
   * workspaces they have (members, agents, keys, tokens, settings and ledger are its own).
   * Recorded as the new workspace's first ledger record, and in each workspace they own.
   */
  createAnotherWorkspace(user: PublicUser, name: string): Promise<WorkspaceView>;
  /** The workspaces a person belongs to, with their role in each. */
  workspacesOf(uid: string): Promise<WorkspaceView[]>;
  /**
   * The caller's role in a workspace, checked against a permission of the one table: `404` for a
   * workspace they are not a member of, `403` for a role without the permission or while they
   * hold a password someone else chose.
   */
  authorize(wid: string, user: PublicUser, permission: Permission): Promise<Role>;
}

/** The people service's contract, by the name the route plugins know it under. */
export type PeopleService = People;

export function createPeopleService(deps: PeopleDeps): People {
  const { store, clock, ids, masterKey } = deps;
  const repo = peopleRepo(store);
  const lockouts = createLockouts({ store, clock, repo, policy: deps.lockout ?? DEFAULT_LOCKOUT, ledger: deps.ledger });
  const ctx: PeopleContext = {
    store,
    clock,
    ids,
    repo,
    lockouts,
    masterKey,
    recoveryKey: deriveKey(masterKey, 'recovery-codes'),
    sessionTtlMs: deps.sessionTtlMs,
    ledger: deps.ledger,
    principalEnded: deps.principalEnded,
  };
  const members = createMembers({ store, clock, ids, repo, ledger: deps.ledger, principalEnded: deps.principalEnded });
  const recovery = createRecovery({
    store,
    clock,
    repo,
    principalEnded: deps.principalEnded,
    ...(deps.ledger ? { ledger: deps.ledger } : {}),
  });

  return {
    ...members,
    workspaceCount: () => repo.workspaceCount(),
    workspaceExists: async (wid) => isId(wid, 'ws') && (await repo.getWorkspace(wid)) !== undefined,
    async memberIdByEmail(wid, email) {
      const user = await repo.userByEmail(email);
      return user && (await repo.roleIn(wid, user.id)) ? user.id : undefined;
    },
    createWorkspace: (input) => createWorkspace(ctx, input),
    resetOwnerPassword: recovery.resetOwnerPassword,
    signIn: (email, password, totp) => signIn(ctx, email, password, totp),
    sessionUser: (secret) => sessionUser(ctx, secret),
    changePassword: (uid, currentPassword, newPassword) => changePassword(ctx, uid, currentPassword, newPassword),
    startTotp: (uid) => startTotp(ctx, uid),
    confirmTotp: (uid, code) => confirmTotp(ctx, uid, code),
    replaceRecoveryCodes: (uid, code) => replaceRecoveryCodes(ctx, uid, code),
    sessionsOf: (uid, currentSecret) => sessionsOf(ctx, uid, currentSecret),
    endSessions: (uid, currentSecret, id) => endSessions(ctx, uid, currentSecret, id),
    disableTotp: (uid, code) => disableTotp(ctx, uid, code),
    liftLockout: lockouts.lift,
    signOut: (secret) => signOut(ctx, secret),
    async me(uid) {
      const [user, workspaces] = await Promise.all([repo.getUser(uid), workspacesOf(ctx, uid)]);
      if (!user) throw new AppError('unauthenticated');
      return { user: toPublicUser(user), workspaces };
    },
    createAnotherWorkspace: (user, name) => createAnotherWorkspace(ctx, user, name),
    workspacesOf: (uid) => workspacesOf(ctx, uid),
    authorize: (wid, user, permission) => authorize(ctx, wid, user, permission),
  };
}
