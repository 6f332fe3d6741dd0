import type { KeyRecord, Store } from '../store/index.js';

/** Workspace and agent keys: [wid, keyId] -> record, and the hash index used to authenticate. */
export function keysRepo(store: Store) {
  const t = store.tables;
  return {
    byHash(hash: string): KeyRecord | undefined {
      const ref = t.keysByHash.get(hash);
      return ref ? t.keys.get(ref) : undefined;
    },
    get(wid: string, keyId: string): KeyRecord | undefined {
      return t.keys.get([wid, keyId]);
    },
    put(record: KeyRecord): void {
      t.keys.put([record.workspaceId, record.id], record);
      t.keysByHash.put(record.hash, [record.workspaceId, record.id]);
    },
    list(wid: string, options: { after?: string; limit?: number }): KeyRecord[] {
      return t.keys.scan([wid], options).map((e) => e.value);
    },
  };
}
