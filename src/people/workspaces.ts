import { AppError, invalidField } from '../errors/app-error.js';
import { isoAt } from '../lib/clock.js';
import type { Role, UserRecord } from './records.js';
import type { PeopleContext } from './context.js';
import { hashPassword } from './passwords.js';
import { roleAllows, rolesFor, type Permission } from './permissions.js';
import { oneTimePasswordFirst } from './refusals.js';
import type { PublicUser, WorkspaceView } from './views.js';

/**
 * Workspaces and a person's place in them: the first workspace with its owner, another one made
 * by an owner, the workspaces a person belongs to, and the permission check every workspace
 * route makes. A workspace the person is not a member of is "not found", never "forbidden".
 */

export interface NewWorkspace {
  name: string;
  ownerEmail: string;
  ownerName?: string;
  ownerPassword: string;
  mustChangePassword?: boolean;
  /** Only if the store has no workspace yet, decided inside the same write. */
  firstOnly?: boolean;
}

/** The workspaces a person belongs to, with their role in each. */
export async function workspacesOf(ctx: Pick<PeopleContext, 'repo'>, uid: string): Promise<WorkspaceView[]> {
  return (await ctx.repo.workspacesOf(uid)).map(({ workspace, role }) => ({
    id: workspace.id,
    name: workspace.name,
    role,
  }));
}

/**
 * Creates a workspace with its owner. `firstOnly`: only if the store has no workspace yet,
 * decided inside the same transaction, so two first starts racing create one workspace.
 */
export async function createWorkspace(
  ctx: PeopleContext,
  input: NewWorkspace,
): Promise<{ workspaceId: string; ownerId: string }> {
  const { store, repo, clock, ids } = ctx;
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
}

/**
 * Another workspace, made by a person who owns one already: they are its owner, and nothing else
 * is shared with the workspaces they have. Recorded as the new workspace's first ledger record,
 * and in each workspace they own.
 */
export async function createAnotherWorkspace(
  ctx: PeopleContext,
  user: PublicUser,
  name: string,
): Promise<WorkspaceView> {
  const { store, repo, clock, ids, ledger } = ctx;
  if (user.mustChangePassword) throw oneTimePasswordFirst();
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
    const record = (workspaceId: string) =>
      ledger?.record({ workspaceId, actor, kind: 'workspace.created', subject: workspace.id, data });
    await record(workspace.id);
    for (const w of owned) await record(w.workspace.id);
  });
  return { id: workspace.id, name: workspace.name, role: 'owner' };
}

/**
 * The caller's role in a workspace, checked against a permission of the one table. A person
 * still holding a password someone else chose (the first start's) may do nothing in a
 * workspace until they change it.
 */
export async function authorize(
  ctx: Pick<PeopleContext, 'repo'>,
  wid: string,
  user: PublicUser,
  permission: Permission,
): Promise<Role> {
  // `user` was read from the store for this request by the session strategy: no second read.
  if (user.mustChangePassword) throw oneTimePasswordFirst();
  const [role, workspace] = await Promise.all([ctx.repo.roleIn(wid, user.id), ctx.repo.getWorkspace(wid)]);
  if (!role || !workspace) throw new AppError('not_found', { message: 'No such workspace.' });
  if (!roleAllows(role, permission)) {
    throw new AppError('forbidden', {
      message: `Only ${rolesFor(permission).join(' or ')} may do this; you are ${role}.`,
    });
  }
  return role;
}
