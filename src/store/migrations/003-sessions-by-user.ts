import type { Migration } from './index.js';

/**
 * Schema 3: an index of sessions by person, [uid, session hash] -> expiresAt, so that a password
 * change (and, later, removing a member) ends every session of that person at once. Built from
 * `sessions`; re-running it rebuilds the same entries.
 */
export const m003SessionsByUser: Migration = {
  version: 3,
  description: 'index sessions by person (sessionsByUser)',
  async apply(tx) {
    for (const { key, value } of await tx.sessions.scan([])) {
      await tx.sessionsByUser.put([value.userId, String(key[0])], value.expiresAt);
    }
  },
};
