import { AppError } from '../../errors/app-error.js';
import type { Clock } from '../../lib/clock.js';
import { secretHash } from '../../lib/secrets.js';
import type { ServiceTokenScope } from '../../service-tokens/records.js';
import { rolesForScope } from './person-access.js';
import type { PersonCaller } from './person-tokens.js';
import type { DeviceRepo } from './repo.js';

/**
 * A `pat_` token as the person it stands for on a route needing `scope`, checked in order: a
 * known access token (401 invalid_token), not expired (401 token_expired), its sign-in live and
 * the person still a member (401 invalid_token), no one-time password held (403, as the console
 * refuses them), and the role they hold now allowed what the route does (403, person-access.ts).
 */
export async function resolvePersonToken(
  deps: { repo: DeviceRepo; clock: Clock },
  value: string,
  scope: ServiceTokenScope | undefined,
): Promise<PersonCaller> {
  const { repo, clock } = deps;
  const token = await repo.getToken(secretHash(value));
  if (!token || token.kind !== 'access')
    throw new AppError('invalid_token', {
      message: 'This sign-in token is unknown or was replaced by a refresh.',
      fix: 'Run svc login again.',
    });
  if (Date.parse(token.expiresAt) <= clock.now())
    throw new AppError('token_expired', {
      message: 'This sign-in token expired.',
      fix: 'Refresh it with its refresh token (the svc command line does so by itself), or run svc login again.',
    });
  const [login, role, user, workspace] = await Promise.all([
    repo.getLogin(token.workspaceId, token.loginId),
    repo.roleIn(token.userId, token.workspaceId),
    repo.getUser(token.userId),
    repo.getWorkspace(token.workspaceId),
  ]);
  if (!login || login.endedAt)
    throw new AppError('invalid_token', { message: 'This sign-in has ended.', fix: 'Run svc login again.' });
  if (!role || !user || !workspace)
    throw new AppError('invalid_token', {
      message: 'You are no longer a member of this workspace.',
      fix: 'Ask an owner or admin of the workspace to add you again, then run svc login.',
    });
  // As in the console: a person holding a password someone else chose (an operator's reset)
  // may do nothing until they change it.
  if (user.mustChangePassword)
    throw new AppError('forbidden', {
      message: 'Change the one-time password first.',
      fix: 'Sign in to the console, choose your own password, then run the command again.',
    });
  const roles = rolesForScope(scope);
  if (roles && !roles.includes(role))
    throw new AppError('forbidden', {
      message: `Only ${roles.join(' or ')} may do this from the command line; you are ${role} in this workspace.`,
      fix: 'Ask an owner or admin of the workspace to do it, or to change your role.',
    });
  return {
    workspaceId: token.workspaceId,
    user: { id: user.id, email: user.email, name: user.name },
    role,
    loginId: login.id,
    expiresAt: token.expiresAt,
  };
}
