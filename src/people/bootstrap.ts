import { randomBytes } from 'node:crypto';
import { AppError } from '../errors/app-error.js';
import type { PeopleService } from './service.js';

export const DEFAULT_OWNER_EMAIL = 'admin@localhost';

/**
 * First start on an empty store: a workspace "Default" with an owner admin@localhost and a
 * random one-time password, returned once for the operator to read and never stored in clear.
 */
export async function bootstrapIfEmpty(people: PeopleService) {
  if ((await people.workspaceCount()) > 0) return null;
  const password = randomBytes(18).toString('base64url');
  try {
    const created = await people.createWorkspace({
      name: 'Default',
      ownerEmail: DEFAULT_OWNER_EMAIL,
      ownerName: 'Administrator',
      ownerPassword: password,
      mustChangePassword: true,
      firstOnly: true,
    });
    return { ...created, email: DEFAULT_OWNER_EMAIL, password };
  } catch (err) {
    // Another process (svc init, a second serve) set the store up first: nothing to bootstrap.
    if (err instanceof AppError && (await people.workspaceCount()) > 0) return null;
    throw err;
  }
}
