import { bumpGeneration, readGeneration } from '../store/generations.js';
import type { Store } from '../store/index.js';
import type { KeyRecord } from './records.js';

/**
 * Workspace and agent keys: [wid, keyId] -> record, and the hash index used to authenticate.
 * Every write of a key bumps the `keys` generation in the same transaction (store/generations.ts):
 * the keys service caches authenticated keys behind it.
 */
export function keysRepo(store: Store) {
  const t = store.tables;
  return {
    byHash(hash: string): Promise<KeyRecord | undefined> {
      return t.keysByHash.get(hash);
    },
    get(wid: string, keyId: string): Promise<KeyRecord | undefined> {
      return t.keys.get([wid, keyId]);
    },
    /** The `keys` generation: one read that says whether a cached key (and its agent) is current. */
    generation(): Promise<number> {
      return readGeneration(t, 'keys');
    },
    /** Writes the record and its hash-index copy together, and bumps the `keys` generation (callers are inside store.write). */
    async put(record: KeyRecord): Promise<void> {
      await t.keys.put([record.workspaceId, record.id], record);
      await t.keysByHash.put(record.hash, record);
      await bumpGeneration(t, 'keys');
    },
    async list(wid: string, options: { after?: string; limit?: number }): Promise<KeyRecord[]> {
      return (await t.keys.scan([wid], options)).map((e) => e.value);
    },
  };
}
