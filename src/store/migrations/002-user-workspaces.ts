import type { Migration } from './index.js';

/**
 * Schema 2: a reverse index of memberships, [uid, wid] -> role, so that signing in and
 * GET /api/me read a person's workspaces directly instead of scanning every workspace.
 * Built from `members`; re-running it rebuilds the same entries.
 */
export const m002UserWorkspaces: Migration = {
  version: 2,
  description: 'index memberships by person (userWorkspaces)',
  async apply(tx) {
    for (const { value } of await tx.members.scan([])) {
      await tx.userWorkspaces.put([value.userId, value.workspaceId], value.role);
    }
  },
};
