import { AppError, invalidField } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import { isId, type IdSource } from '../lib/ids.js';
import { secretHash } from '../lib/secrets.js';
import { deriveKey } from '../lib/seal.js';
import type { Store } from '../store/index.js';
import type { Role, UserRecord } from './records.js';
import { createMembers, type MembersLedger } from './members.js';
import { hashPassword, verifyPassword } from './passwords.js';
import { roleAllows, rolesFor, type Permission } from './permissions.js';
import { createRecovery } from './recovery.js';
import { peopleRepo } from './repo.js';
import QRCode from 'qrcode';
import {
  isRecoveryCode,
  matchingStep,
  newRecoveryCodes,
  newTotpSecret,
  otpauthUri,
  recoveryCodeHash,
  recoveryCodeIndex,
  sealTotpSecret,
  unsealTotpSecret,
} from './two-factor.js';
import { cleared, createLockouts, type Account, type LockoutPolicy } from './lockouts.js';
import type { PrincipalEnded } from '../lib/principal-ended.js';

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
 */

/** The least a new password may be (NIST SP 800-63B asks at least 8; an operator's console, 12). */
export const MIN_PASSWORD_LENGTH = 12;

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

export interface PublicUser {
  id: string;
  email: string;
  name: string;
  /** The password was chosen by someone else (the first start's one-time password): change it. */
  mustChangePassword: boolean;
  /** Two-factor is on: sign-in asks for a code. */
  totp: boolean;
}

export interface WorkspaceView {
  id: string;
  name: string;
  role: Role;
}

export function toPublicUser(user: UserRecord): PublicUser {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    mustChangePassword: user.mustChangePassword === true,
    totp: totpOn(user),
  };
}

const totpOn = (user: UserRecord | undefined): boolean => typeof user?.totp?.confirmedAt === 'string';

/** `400 invalid_request` naming one field, saying how many attempts are left before a lockout. */
function wrongSecret(field: string, message: string, attemptsLeft?: number): AppError {
  return new AppError('invalid_request', {
    details: { errors: [{ field, message }], ...(attemptsLeft === undefined ? {} : { attemptsLeft }) },
  });
}

function notCurrentPassword(attemptsLeft?: number): AppError {
  return wrongSecret('currentPassword', '"currentPassword" is not the current password', attemptsLeft);
}

function wrongCredentials(): AppError {
  return new AppError('unauthenticated', {
    message: 'The email or password is wrong.',
    fix: 'Check the email and password and sign in again.',
  });
}

function totpRequired(message: string, attemptsLeft?: number): AppError {
  return new AppError('totp_required', {
    message,
    ...(attemptsLeft === undefined ? {} : { details: { attemptsLeft } }),
  });
}

function wrongCode(attemptsLeft?: number): AppError {
  return wrongSecret('code', '"code" is not the current code of your authenticator', attemptsLeft);
}

const USED_CODE = 'The two-factor code is wrong, or was used already.';

/** The second factor a sign-in gave: a code's time step, or a recovery code (its hash). */
type SecondFactor = { step: number } | { recovery: string };

/** One of a person's console sessions as they see it: never its secret, nor its stored hash whole. */
export interface SessionView {
  id: string;
  createdAt: string;
  expiresAt: string;
  current: boolean;
}

/** A session's public id: a prefix of its stored hash (the hash of its secret), enough to name it. */
const sessionId = (hash: string) => `ses_${hash.slice(0, 16)}`;

export function createPeopleService(deps: PeopleDeps) {
  const { store, clock, ids, masterKey } = deps;
  const recoveryKey = deriveKey(masterKey, 'recovery-codes');
  const repo = peopleRepo(store);
  const members = createMembers({ store, clock, ids, repo, ledger: deps.ledger, principalEnded: deps.principalEnded });
  const recovery = createRecovery({
    store,
    clock,
    repo,
    principalEnded: deps.principalEnded,
    ...(deps.ledger ? { ledger: deps.ledger } : {}),
  });
  const lockouts = createLockouts({ store, clock, repo, policy: deps.lockout ?? DEFAULT_LOCKOUT, ledger: deps.ledger });

  /** The step a code of this person's secret matches now and that was not used yet, or null. */
  function freshStep(user: UserRecord, code: string): number | null {
    if (!user.totp) return null;
    const step = matchingStep(unsealTotpSecret(masterKey, user.id, user.totp.sealed), code, clock.now());
    return step !== null && step > (user.totp.lastStep ?? -1) ? step : null;
  }

  /**
   * Sign-in's second factor, once the password was right: the step the code used. A code is an
   * attempt at the account's two-factor, counted before it is checked.
   */
  async function signInStep(user: UserRecord, code: string | undefined): Promise<SecondFactor | null> {
    if (!totpOn(user)) return null;
    if (code === undefined) throw totpRequired('This account needs a two-factor code: send it as totp.');
    const attempt = await lockouts.take(user.id, 'totp');
    // A recovery code goes where the code goes (two-factor.ts), and is good once.
    if (isRecoveryCode(code)) {
      if (recoveryCodeIndex(recoveryKey, user.id, user.totp!.recovery ?? [], code) === -1)
        throw lockouts.refusal(attempt, (left) => totpRequired(USED_CODE, left));
      return { recovery: recoveryCodeHash(recoveryKey, user.id, code) };
    }
    const step = freshStep(user, code);
    if (step === null) throw lockouts.refusal(attempt, (left) => totpRequired(USED_CODE, left));
    return { step };
  }

  async function workspacesOf(uid: string): Promise<WorkspaceView[]> {
    return (await repo.workspacesOf(uid)).map(({ workspace, role }) => ({
      id: workspace.id,
      name: workspace.name,
      role,
    }));
  }

  return {
    workspaceCount: () => repo.workspaceCount(),

    /** Whether the workspace exists (workspaces are never removed); `wid` may be any text from outside. */
    workspaceExists: async (wid: string): Promise<boolean> =>
      isId(wid, 'ws') && (await repo.getWorkspace(wid)) !== undefined,

    /** The id of the person with this email who is a member of the workspace, if any. */
    async memberIdByEmail(wid: string, email: string): Promise<string | undefined> {
      const user = await repo.userByEmail(email);
      return user && (await repo.roleIn(wid, user.id)) ? user.id : undefined;
    },

    /**
     * Creates a workspace with its owner. `firstOnly`: only if the store has no workspace yet,
     * decided inside the same transaction, so two first starts racing create one workspace.
     */
    async createWorkspace(input: {
      name: string;
      ownerEmail: string;
      ownerName?: string;
      ownerPassword: string;
      mustChangePassword?: boolean;
      firstOnly?: boolean;
    }) {
      const passwordHash = await hashPassword(input.ownerPassword);
      const at = isoAt(clock.now());
      const workspace = { id: ids.id('ws'), name: input.name, createdAt: at };
      const user: UserRecord = {
        id: ids.id('usr'),
        email: input.ownerEmail.trim(),
        name: input.ownerName ?? input.ownerEmail.split('@')[0]!,
        passwordHash,
        createdAt: at,
        ...(input.mustChangePassword ? { mustChangePassword: true } : {}),
      };
      await store.write(async () => {
        if (input.firstOnly && (await repo.workspaceCount()) > 0) {
          throw new AppError('invalid_request', {
            message: 'The store already has a workspace.',
            fix: 'Set up only an empty store. To add a workspace to this one, an owner runs svc workspaces create NAME (POST /api/workspaces).',
          });
        }
        if (await repo.userByEmail(user.email)) throw invalidField('email', 'a person with this email already exists');
        await repo.putWorkspace(workspace);
        await repo.putUser(user);
        await repo.putMember({ workspaceId: workspace.id, userId: user.id, role: 'owner', addedAt: at });
      });
      return { workspaceId: workspace.id, ownerId: user.id };
    },

    ...members,

    /** The operator's reset of an owner's password (recovery.ts). */
    resetOwnerPassword: recovery.resetOwnerPassword,

    async signIn(email: string, password: string, totp?: string) {
      const user = await repo.userByEmail(email);
      const ok = await verifyPassword(user?.passwordHash, password);
      if (!user || !ok) throw wrongCredentials();
      const step = await signInStep(user, totp);
      let recoveryCodesLeft: number | undefined;
      const secret = ids.secret('sid');
      const now = clock.now();
      await store.write(async () => {
        // The password verified above must still be the password when the session is stored:
        // a sign-in racing a password change must not outlive it.
        const latest = await repo.getUser(user.id);
        if (latest?.passwordHash !== user.passwordHash) throw wrongCredentials();
        // The code is spent with the session: a second sign-in with it, even a racing one, fails.
        if (totpOn(latest)) {
          if (step === null || latest.totp!.sealed !== user.totp?.sealed) throw totpRequired(USED_CODE);
          if ('recovery' in step) {
            // Spent with the session, like a code: a racing sign-in with it finds it gone.
            const left = (latest.totp!.recovery ?? []).filter((h) => h !== step.recovery);
            if (left.length === (latest.totp!.recovery ?? []).length) throw totpRequired(USED_CODE);
            await repo.putUser(cleared({ ...latest, totp: { ...latest.totp!, recovery: left } }, ['totp']));
            recoveryCodesLeft = left.length;
          } else {
            if (step.step <= (latest.totp!.lastStep ?? -1)) throw totpRequired(USED_CODE);
            // A right code clears the count of wrong ones.
            await repo.putUser(cleared({ ...latest, totp: { ...latest.totp!, lastStep: step.step } }, ['totp']));
          }
        }
        // Sessions are not kept past their expiry: each sign-in clears the person's expired ones.
        await repo.removeExpiredSessionsOf(user.id, isoAt(now));
        await repo.putSession(secretHash(secret), {
          userId: user.id,
          createdAt: isoAt(now),
          expiresAt: isoAt(now + deps.sessionTtlMs),
        });
      });
      return {
        secret,
        user: toPublicUser(user),
        workspaces: await workspacesOf(user.id),
        ...(recoveryCodesLeft !== undefined ? { recoveryCodesLeft } : {}),
      };
    },

    /** The person behind a session secret, or undefined when it is unknown or expired. */
    async sessionUser(secret: string): Promise<PublicUser | undefined> {
      const session = await repo.getSession(secretHash(secret));
      if (!session || Date.parse(session.expiresAt) <= clock.now()) return undefined;
      const user = await repo.getUser(session.userId);
      return user ? toPublicUser(user) : undefined;
    },

    /**
     * Changes a person's password and ends every session of theirs, the one making the change
     * too (a stolen copy of its cookie must not survive the change); the caller gets a new
     * session secret in its place.
     */
    async changePassword(
      uid: string,
      currentPassword: string,
      newPassword: string,
    ): Promise<{ sessionsEnded: number; secret: string }> {
      const user = await repo.getUser(uid);
      if (!user) throw new AppError('unauthenticated');
      if (newPassword === currentPassword) {
        throw invalidField('newPassword', '"newPassword" must differ from the current password');
      }
      // Counted before it is checked (lockouts.ts): a burst of guesses cannot outrun the count.
      const attempt = await lockouts.take(uid, 'password');
      if (!(await verifyPassword(user.passwordHash, currentPassword))) {
        throw lockouts.refusal(attempt, notCurrentPassword);
      }
      const passwordHash = await hashPassword(newPassword);
      const secret = ids.secret('sid');
      const now = clock.now();
      return store.write(async () => {
        const latest = await repo.getUser(uid);
        if (!latest) throw new AppError('unauthenticated');
        // Two changes racing with the same current password: only the first one wins.
        if (latest.passwordHash !== user.passwordHash) {
          throw notCurrentPassword();
        }
        const { mustChangePassword: _was, ...rest } = latest as Account;
        await repo.putUser(cleared({ ...rest, passwordHash }, ['password']));
        const sessionsEnded = await repo.removeSessionsOf(uid);
        // Command-line sign-ins made with the old password end too (a stolen laptop's among them).
        await deps.principalEnded.credentialsChanged(uid, 'password changed', now);
        await repo.putSession(secretHash(secret), {
          userId: uid,
          createdAt: isoAt(now),
          expiresAt: isoAt(now + deps.sessionTtlMs),
        });
        return { sessionsEnded, secret };
      });
    },

    /**
     * Starts a two-factor enrolment: a new secret, sealed in the store and answered once. Until a
     * code confirms it, sign-in does not ask for codes; a new start replaces a waiting one.
     */
    async startTotp(uid: string): Promise<{ secret: string; otpauthUri: string; qrSvg: string }> {
      const user = await repo.getUser(uid);
      if (!user) throw new AppError('unauthenticated');
      const secret = newTotpSecret();
      const sealed = sealTotpSecret(masterKey, uid, secret);
      await store.write(async () => {
        const latest = await repo.getUser(uid);
        if (!latest) throw new AppError('unauthenticated');
        if (totpOn(latest)) {
          throw invalidField(null, 'two-factor is already on: turn it off first (DELETE /api/me/totp with a code)');
        }
        await repo.putUser({ ...latest, totp: { sealed, confirmedAt: null } });
      });
      const uri = otpauthUri(secret, user.email);
      // The same URI as a QR code (an SVG image) for an authenticator app's camera.
      const qrSvg = await QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
      return { secret, otpauthUri: uri, qrSvg };
    },

    /** A current code of the waiting enrolment turns two-factor on (and is spent). */
    async confirmTotp(uid: string, code: string): Promise<{ totp: true; recoveryCodes: string[] }> {
      const user = await repo.getUser(uid);
      if (!user) throw new AppError('unauthenticated');
      if (!user.totp) throw invalidField(null, 'no two-factor enrolment is waiting: start one with POST /api/me/totp');
      if (totpOn(user)) throw invalidField(null, 'two-factor is already on');
      const attempt = await lockouts.take(uid, 'totp');
      const step = freshStep(user, code);
      if (step === null) throw lockouts.refusal(attempt, wrongCode);
      const recoveryCodes = newRecoveryCodes();
      await store.write(async () => {
        const latest = await repo.getUser(uid);
        // Another enrolment started meanwhile: this code belongs to a secret no longer waiting.
        if (!latest?.totp || latest.totp.sealed !== user.totp!.sealed || totpOn(latest)) throw wrongCode();
        await repo.putUser(
          cleared(
            {
              ...latest,
              totp: {
                sealed: latest.totp.sealed,
                confirmedAt: isoAt(clock.now()),
                lastStep: step,
                recovery: recoveryCodes.map((c) => recoveryCodeHash(recoveryKey, uid, c)),
              },
            },
            ['totp'],
          ),
        );
      });
      // Shown this once: only their hashes are kept.
      return { totp: true, recoveryCodes };
    },

    /**
     * New recovery codes in place of the old ones (all of them, used or not), for a person with
     * two-factor on and a current code; shown this once.
     */
    async replaceRecoveryCodes(uid: string, code: string): Promise<{ recoveryCodes: string[] }> {
      const user = await repo.getUser(uid);
      if (!user) throw new AppError('unauthenticated');
      if (!totpOn(user)) throw invalidField(null, 'two-factor is not on: turn it on first (POST /api/me/totp)');
      const attempt = await lockouts.take(uid, 'totp');
      const step = freshStep(user, code);
      if (step === null) throw lockouts.refusal(attempt, wrongCode);
      const recoveryCodes = newRecoveryCodes();
      await store.write(async () => {
        const latest = await repo.getUser(uid);
        if (!latest?.totp || latest.totp.sealed !== user.totp!.sealed || step <= (latest.totp.lastStep ?? -1))
          throw wrongCode();
        await repo.putUser(
          cleared(
            {
              ...latest,
              totp: {
                ...latest.totp,
                lastStep: step,
                recovery: recoveryCodes.map((c) => recoveryCodeHash(recoveryKey, uid, c)),
              },
            },
            ['totp'],
          ),
        );
      });
      return { recoveryCodes };
    },

    /** The person's own console sessions, newest first; `current` marks the one asking. */
    async sessionsOf(uid: string, currentSecret: string): Promise<{ sessions: SessionView[] }> {
      const now = isoAt(clock.now());
      const current = secretHash(currentSecret);
      const sessions: SessionView[] = [];
      for (const { hash, session } of await repo.sessionsOf(uid)) {
        if (session.expiresAt <= now) continue;
        sessions.push({
          id: sessionId(hash),
          createdAt: session.createdAt,
          expiresAt: session.expiresAt,
          current: hash === current,
        });
      }
      sessions.sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
      return { sessions };
    },

    /**
     * Ends the person's other sessions (a browser left signed in elsewhere), or the one named by
     * `id`; never the one asking (signing out ends that).
     */
    async endSessions(uid: string, currentSecret: string, id?: string): Promise<{ sessionsEnded: number }> {
      const current = secretHash(currentSecret);
      return store.write(async () => {
        let sessionsEnded = 0;
        for (const { hash } of await repo.sessionsOf(uid)) {
          if (hash === current || (id !== undefined && sessionId(hash) !== id)) continue;
          await repo.removeSession(hash);
          sessionsEnded += 1;
        }
        if (id !== undefined && sessionsEnded === 0)
          throw new AppError('not_found', { message: `No other session of yours has the id ${id}.` });
        return { sessionsEnded };
      });
    },

    /** Turns two-factor off (or drops a waiting enrolment); needs a current, unused code. */
    async disableTotp(uid: string, code: string): Promise<{ totp: false }> {
      const user = await repo.getUser(uid);
      if (!user) throw new AppError('unauthenticated');
      if (!user.totp) throw invalidField(null, 'two-factor is not on');
      const attempt = await lockouts.take(uid, 'totp');
      // A recovery code turns it off too (the authenticator lost), spent with it.
      const recovery = isRecoveryCode(code) ? recoveryCodeHash(recoveryKey, uid, code) : null;
      const step = recovery === null ? freshStep(user, code) : null;
      if (
        recovery !== null ? recoveryCodeIndex(recoveryKey, uid, user.totp.recovery ?? [], code) === -1 : step === null
      )
        throw lockouts.refusal(attempt, wrongCode);
      await store.write(async () => {
        const latest = await repo.getUser(uid);
        if (!latest?.totp || latest.totp.sealed !== user.totp!.sealed) throw wrongCode();
        if (
          recovery !== null ? !(latest.totp.recovery ?? []).includes(recovery) : step! <= (latest.totp.lastStep ?? -1)
        )
          throw wrongCode();
        const { totp: _off, ...rest } = latest as Account;
        await repo.putUser(cleared(rest, ['totp']));
      });
      return { totp: false };
    },

    /** An owner lifts a member's lockouts (lockouts.ts); recorded in this workspace. */
    liftLockout: lockouts.lift,

    async signOut(secret: string): Promise<void> {
      await store.write(() => repo.removeSession(secretHash(secret)));
    },

    async me(uid: string) {
      const [user, workspaces] = await Promise.all([repo.getUser(uid), workspacesOf(uid)]);
      if (!user) throw new AppError('unauthenticated');
      return { user: toPublicUser(user), workspaces };
    },

    /**
     * Another workspace, made by a person who owns one already (`POST /api/workspaces`,
     * `svc workspaces create`): they are its owner, and nothing else is shared with the
     * workspaces they have (members, agents, keys, tokens, settings and ledger are its own).
     * Recorded as the new workspace's first ledger record, and in each workspace they own.
     */
    async createAnotherWorkspace(user: PublicUser, name: string): Promise<WorkspaceView> {
      if (user.mustChangePassword) {
        throw new AppError('forbidden', {
          message: 'Change the one-time password first.',
          fix: 'Send PUT /api/me/password with currentPassword and a newPassword of your own.',
        });
      }
      const at = isoAt(clock.now());
      const workspace = { id: ids.id('ws'), name: name.trim(), createdAt: at };
      await store.write(async () => {
        const owned = (await repo.workspacesOf(user.id)).filter((w) => roleAllows(w.role, 'workspaces.create'));
        if (owned.length === 0) {
          throw new AppError('forbidden', {
            message: `Only ${rolesFor('workspaces.create').join(' or ')} of a workspace may create another.`,
            fix: 'Ask an owner of your workspace to create it and add you to it.',
          });
        }
        await repo.putWorkspace(workspace);
        await repo.putMember({ workspaceId: workspace.id, userId: user.id, role: 'owner', addedAt: at });
        const data = { name: workspace.name, owner: user.id };
        const actor = `user:${user.id}`;
        await deps.ledger?.record({
          workspaceId: workspace.id,
          actor,
          kind: 'workspace.created',
          subject: workspace.id,
          data,
        });
        for (const w of owned)
          await deps.ledger?.record({
            workspaceId: w.workspace.id,
            actor,
            kind: 'workspace.created',
            subject: workspace.id,
            data,
          });
      });
      return { id: workspace.id, name: workspace.name, role: 'owner' };
    },

    /** The workspaces a person belongs to, with their role in each. */
    workspacesOf,

    /**
     * The caller's role in a workspace, checked against a permission of the one table. A person
     * still holding a password someone else chose (the first start's) may do nothing in a
     * workspace until they change it.
     */
    async authorize(wid: string, user: PublicUser, permission: Permission): Promise<Role> {
      // `user` was read from the store for this request by the session strategy: no second read.
      if (user.mustChangePassword) {
        throw new AppError('forbidden', {
          message: 'Change the one-time password first.',
          fix: 'Send PUT /api/me/password with currentPassword and a newPassword of your own.',
        });
      }
      const [role, workspace] = await Promise.all([repo.roleIn(wid, user.id), repo.getWorkspace(wid)]);
      if (!role || !workspace) throw new AppError('not_found', { message: 'No such workspace.' });
      if (!roleAllows(role, permission)) {
        throw new AppError('forbidden', {
          message: `Only ${rolesFor(permission).join(' or ')} may do this; you are ${role}.`,
        });
      }
      return role;
    },
  };
}

export type PeopleService = ReturnType<typeof createPeopleService>;
