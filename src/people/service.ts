import { AppError, invalidField } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import { secretHash } from '../lib/secrets.js';
import type { Role, Store, UserRecord } from '../store/index.js';
import { hashPassword, verifyPassword } from './passwords.js';
import { roleAllows, rolesFor, type Permission } from './permissions.js';
import { peopleRepo } from './repo.js';

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
}

export interface PublicUser {
  id: string;
  email: string;
  name: string;
  /** The password was chosen by someone else (the first start's one-time password): change it. */
  mustChangePassword: boolean;
}

export interface WorkspaceView {
  id: string;
  name: string;
  role: Role;
}

export function toPublicUser(user: UserRecord): PublicUser {
  return { id: user.id, email: user.email, name: user.name, mustChangePassword: user.mustChangePassword === true };
}

function notCurrentPassword(): AppError {
  return invalidField('currentPassword', '"currentPassword" is not the current password');
}

function wrongCredentials(): AppError {
  return new AppError('unauthenticated', {
    message: 'The email or password is wrong.',
    fix: 'Check the email and password and sign in again.',
  });
}

export function createPeopleService(deps: PeopleDeps) {
  const { store, clock, ids } = deps;
  const repo = peopleRepo(store);

  function workspacesOf(uid: string): WorkspaceView[] {
    return repo.workspacesOf(uid).map(({ workspace, role }) => ({ id: workspace.id, name: workspace.name, role }));
  }

  return {
    workspaceCount: () => repo.workspaceCount(),

    /** Creates a workspace with its first owner (first start, `svc init`, tests). */
    /**
     * Creates a workspace with its owner. `firstOnly`: only if the store has no workspace yet,
     * decided inside the same transaction, so two first starts racing create one workspace.
     */
    async createWorkspace(input: { name: string; ownerEmail: string; ownerName?: string; ownerPassword: string; mustChangePassword?: boolean; firstOnly?: boolean }) {
      const passwordHash = await hashPassword(input.ownerPassword);
      const at = isoAt(clock.now());
      const workspace = { id: ids.id('ws'), name: input.name, createdAt: at };
      const user: UserRecord = {
        id: ids.id('usr'), email: input.ownerEmail.trim(), name: input.ownerName ?? input.ownerEmail.split('@')[0]!,
        passwordHash, createdAt: at, ...(input.mustChangePassword ? { mustChangePassword: true } : {}),
      };
      await store.write(() => {
        if (input.firstOnly && repo.workspaceCount() > 0) {
          throw new AppError('invalid_request', { message: 'The store already has a workspace.', fix: 'Set up only an empty store; use the console to add workspaces.' });
        }
        if (repo.userByEmail(user.email)) throw invalidField('email', 'a person with this email already exists');
        repo.putWorkspace(workspace);
        repo.putUser(user);
        repo.putMember({ workspaceId: workspace.id, userId: user.id, role: 'owner', addedAt: at });
      });
      return { workspaceId: workspace.id, ownerId: user.id };
    },

    /** Adds a person to a workspace (members routes arrive with the people issue). */
    async addMember(input: { workspaceId: string; email: string; name?: string; password: string; role: Role }) {
      const passwordHash = await hashPassword(input.password);
      const at = isoAt(clock.now());
      return store.write(() => {
        let user = repo.userByEmail(input.email);
        if (!user) {
          user = { id: ids.id('usr'), email: input.email.trim(), name: input.name ?? input.email.split('@')[0]!, passwordHash, createdAt: at };
          repo.putUser(user);
        }
        repo.putMember({ workspaceId: input.workspaceId, userId: user.id, role: input.role, addedAt: at });
        return toPublicUser(user);
      });
    },

    async signIn(email: string, password: string) {
      const user = repo.userByEmail(email);
      const ok = await verifyPassword(user?.passwordHash, password);
      if (!user || !ok) throw wrongCredentials();
      const secret = ids.secret('sid');
      const now = clock.now();
      await store.write(() => {
        // The password verified above must still be the password when the session is stored:
        // a sign-in racing a password change must not outlive it.
        if (repo.getUser(user.id)?.passwordHash !== user.passwordHash) throw wrongCredentials();
        // Sessions are not kept past their expiry: each sign-in clears the person's expired ones.
        repo.removeExpiredSessionsOf(user.id, isoAt(now));
        repo.putSession(secretHash(secret), { userId: user.id, createdAt: isoAt(now), expiresAt: isoAt(now + deps.sessionTtlMs) });
      });
      return { secret, user: toPublicUser(user), workspaces: workspacesOf(user.id) };
    },

    /** The person behind a session secret, or undefined when it is unknown or expired. */
    sessionUser(secret: string): PublicUser | undefined {
      const session = repo.getSession(secretHash(secret));
      if (!session || Date.parse(session.expiresAt) <= clock.now()) return undefined;
      const user = repo.getUser(session.userId);
      return user ? toPublicUser(user) : undefined;
    },

    /**
     * Changes a person's password and ends every session of theirs, the one making the change
     * too (a stolen copy of its cookie must not survive the change); the caller gets a new
     * session secret in its place.
     */
    async changePassword(uid: string, currentPassword: string, newPassword: string): Promise<{ sessionsEnded: number; secret: string }> {
      const user = repo.getUser(uid);
      if (!user) throw new AppError('unauthenticated');
      if (!await verifyPassword(user.passwordHash, currentPassword)) {
        throw notCurrentPassword();
      }
      if (newPassword === currentPassword) {
        throw invalidField('newPassword', '"newPassword" must differ from the current password');
      }
      const passwordHash = await hashPassword(newPassword);
      const secret = ids.secret('sid');
      const now = clock.now();
      return store.write(() => {
        const latest = repo.getUser(uid);
        if (!latest) throw new AppError('unauthenticated');
        // Two changes racing with the same current password: only the first one wins.
        if (latest.passwordHash !== user.passwordHash) {
          throw notCurrentPassword();
        }
        const { mustChangePassword: _was, ...rest } = latest;
        repo.putUser({ ...rest, passwordHash });
        const sessionsEnded = repo.removeSessionsOf(uid);
        repo.putSession(secretHash(secret), { userId: uid, createdAt: isoAt(now), expiresAt: isoAt(now + deps.sessionTtlMs) });
        return { sessionsEnded, secret };
      });
    },

    async signOut(secret: string): Promise<void> {
      await store.write(() => repo.removeSession(secretHash(secret)));
    },

    me(uid: string) {
      const user = repo.getUser(uid);
      if (!user) throw new AppError('unauthenticated');
      return { user: toPublicUser(user), workspaces: workspacesOf(uid) };
    },

    /**
     * The caller's role in a workspace, checked against a permission of the one table. A person
     * still holding a password someone else chose (the first start's) may do nothing in a
     * workspace until they change it.
     */
    authorize(wid: string, user: PublicUser, permission: Permission): Role {
      // `user` was read from the store for this request by the session strategy: no second read.
      if (user.mustChangePassword) {
        throw new AppError('forbidden', {
          message: 'Change the one-time password first.',
          fix: 'Send PUT /api/me/password with currentPassword and a newPassword of your own.',
        });
      }
      const role = repo.roleIn(wid, user.id);
      if (!role || !repo.getWorkspace(wid)) throw new AppError('not_found', { message: 'No such workspace.' });
      if (!roleAllows(role, permission)) {
        throw new AppError('forbidden', { message: `Only ${rolesFor(permission).join(' or ')} may do this; you are ${role}.` });
      }
      return role;
    },
  };
}

export type PeopleService = ReturnType<typeof createPeopleService>;
