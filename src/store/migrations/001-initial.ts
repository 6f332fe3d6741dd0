import type { Migration } from './index.js';

/** Schema 1: the tables of tables.ts exist (LMDB creates named databases on first open). */
export const m001Initial: Migration = {
  version: 1,
  description: 'initial schema',
  async apply(tx, { now }) {
    if ((await tx.meta.get('createdAt')) === undefined) await tx.meta.put('createdAt', now);
  },
};
