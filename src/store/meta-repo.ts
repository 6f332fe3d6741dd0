import { MASTER_KEY_CHECK } from './master-key.js';
import type { Store } from './types.js';

/**
 * The store's own bookkeeping in its meta table, as the composition root (app.ts: the master
 * key's check value) and readiness (http/system.ts: the small write that rechecks a full store)
 * use it. Writes only inside store.write().
 */
export function metaRepo(store: Store) {
  const t = store.tables;
  return {
    /** The check value of the master key the store was made with, if recorded. */
    async keyCheck(): Promise<unknown> {
      return t.meta.get(MASTER_KEY_CHECK);
    },
    async putKeyCheck(check: string): Promise<void> {
      await t.meta.put(MASTER_KEY_CHECK, check);
    },
    /** Counts one readiness write (its only purpose is to find whether the store takes writes again). */
    async bumpWriteCheck(): Promise<void> {
      await t.meta.put('writeCheck', Number((await t.meta.get('writeCheck')) ?? 0) + 1);
    },
  };
}
