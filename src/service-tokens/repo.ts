import type { Store } from '../store/index.js';
import type { ServiceTokenRecord } from './records.js';

/** Service tokens: [wid, tokenId] -> record, and the hash index (hash -> [wid, tokenId]) used to authenticate. */
export function serviceTokensRepo(store: Store) {
  const t = store.tables;
  return {
    get(wid: string, id: string): Promise<ServiceTokenRecord | undefined> {
      return t.serviceTokens.get([wid, id]);
    },
    /** The token a hash names, through the hash index (two reads). */
    async byHash(hash: string): Promise<ServiceTokenRecord | undefined> {
      const ref = await t.serviceTokensByHash.get(hash);
      return ref ? t.serviceTokens.get(ref) : undefined;
    },
    /** A new token and its hash-index entry (inside store.write). */
    async create(record: ServiceTokenRecord): Promise<void> {
      await t.serviceTokens.put([record.workspaceId, record.id], record);
      await t.serviceTokensByHash.put(record.hash, [record.workspaceId, record.id]);
    },
    /** A changed token (its hash, and so its index entry, never changes; inside store.write). */
    async put(record: ServiceTokenRecord): Promise<void> {
      await t.serviceTokens.put([record.workspaceId, record.id], record);
    },
    async list(wid: string, options: { after?: string; limit?: number }): Promise<ServiceTokenRecord[]> {
      return (await t.serviceTokens.scan([wid], options)).map((e) => e.value);
    },
  };
}
