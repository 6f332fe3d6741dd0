import { randomBytes } from 'node:crypto';
import { AppError } from '../errors/app-error.js';
import type { Clock } from '../lib/clock.js';
import type { Store } from '../store/index.js';
import { cleared, LOCK_KINDS, type Account } from './lockouts.js';
import type { MembersLedger } from './members.js';
import { hashPassword } from './passwords.js';
import type { PeopleRepo } from './repo.js';
import type { PrincipalEnded } from '../lib/principal-ended.js';

/**
 * The operator's recovery of an owner's access (`svc owner reset-password --local`): the operator
 * of the store is the root of trust, as for `--local` keys.
 *
 * Rules:
 * - Only an owner of some workspace is reset this way; members are reset by an owner in the console.
 * - The new password is random (144 bits), returned once and stored only as a hash; the person
 *   must replace it before anything else (`mustChangePassword`), as after the first start.
 * - Every session of the person ends, and their lockouts are lifted, in the same transaction.
 * - With `disableTwoFactor`, their two-factor is turned off too (a lost authenticator).
 * - Each workspace the person belongs to gets a ledger record `member.password_reset`, actor
 *   `system` (the operator at the store), in that transaction.
 */
/** What `svc owner reset-password` reports: the new one-time password is shown this once. */
export interface OwnerPasswordReset {
  userId: string;
  email: string;
  password: string;
  sessionsEnded: number;
  twoFactorDisabled: boolean;
  workspaces: string[];
}

/**
 * The operator's way back into a workspace whose owner lost their password (`svc owner
 * reset-password`, at the store). Writes the person's account and ends their sessions and
 * command-line sign-ins; records `member.password_reset` in each of their workspaces.
 */
export interface Recovery {
  /** A new one-time password for an owner (their two-factor off too with `disableTwoFactor`), shown once. */
  resetOwnerPassword(email: string, options?: { disableTwoFactor?: boolean }): Promise<OwnerPasswordReset>;
}

export function createRecovery(deps: {
  store: Store;
  clock: Clock;
  repo: PeopleRepo;
  ledger?: MembersLedger;
  principalEnded: PrincipalEnded;
}): Recovery {
  const { store, repo, ledger } = deps;
  return {
    async resetOwnerPassword(email: string, options: { disableTwoFactor?: boolean } = {}): Promise<OwnerPasswordReset> {
      const user = await repo.userByEmail(email);
      if (!user) throw new AppError('not_found', { message: `No person with the email ${email} in this store.` });
      const memberships = await repo.workspacesOf(user.id);
      if (!memberships.some((m) => m.role === 'owner')) {
        throw new AppError('forbidden', {
          message: `${user.email} is not an owner of any workspace.`,
          fix: "An owner resets a member's password in the console (Members); reset an owner's here.",
        });
      }
      const password = randomBytes(18).toString('base64url');
      const passwordHash = await hashPassword(password);
      return store.write(async () => {
        const latest = (await repo.getUser(user.id)) as Account | undefined;
        if (!latest) throw new AppError('not_found', { message: `No person with the email ${email} in this store.` });
        const twoFactorDisabled = options.disableTwoFactor === true && latest.totp !== undefined;
        const { totp, ...rest } = latest;
        const next = twoFactorDisabled ? rest : { ...rest, ...(totp ? { totp } : {}) };
        await repo.putUser(cleared({ ...next, passwordHash, mustChangePassword: true }, LOCK_KINDS));
        const sessionsEnded = await repo.removeSessionsOf(user.id);
        await deps.principalEnded.credentialsChanged(user.id, 'password reset by the operator', deps.clock.now());
        const workspaces = (await repo.workspacesOf(user.id)).map((m) => m.workspace.id);
        for (const workspaceId of workspaces) {
          await ledger?.record({
            workspaceId,
            actor: 'system',
            kind: 'member.password_reset',
            subject: user.id,
            data: { by: 'operator (svc owner reset-password --local)', sessionsEnded, twoFactorDisabled },
          });
        }
        return { userId: user.id, email: user.email, password, sessionsEnded, twoFactorDisabled, workspaces };
      });
    },
  };
}
