import type { KeyRecord, Store } from '../store/index.js';

/** Workspace and agent keys: [wid, keyId] -> record, and the hash index used to authenticate. */
export function keysRepo(store: Store) {
  const t = store.tables;
  return {
    byHash(hash: string): KeyRecord | undefined {
      return t.keysByHash.get(hash);
    },
    get(wid: string, keyId: string): KeyRecord | undefined {
      return t.keys.get([wid, keyId]);
    },
    /** Writes the record and its hash-index copy together (callers are inside store.write). */
    put(record: KeyRecord): void {
      t.keys.put([record.workspaceId, record.id], record);
      t.keysByHash.put(record.hash, record);
    },
    list(wid: string, options: { after?: string; limit?: number }): KeyRecord[] {
      return t.keys.scan([wid], options).map((e) => e.value);
    },
  };
}
