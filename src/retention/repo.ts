import type { KeyPart, Store, Table, Tables } from '../store/index.js';

/**
 * The sweeper's reads and removals, over any table a job names (sweeper.ts). Removals only
 * inside store.write().
 */
export function sweepRepo(store: Store) {
  const t = store.tables;
  const table = (name: keyof Tables) => t[name] as Table<unknown>;
  return {
    /** Up to `limit` entries of a table in key order, after `from` (the whole key) when given. */
    async page(name: keyof Tables, from: KeyPart[] | undefined, limit: number) {
      return table(name).scan([], from ? { startAfter: from, limit } : { limit });
    },
    async get(name: keyof Tables, key: KeyPart[]): Promise<unknown> {
      return table(name).get(key);
    },
    async remove(name: keyof Tables, key: KeyPart[]): Promise<void> {
      await table(name).remove(key);
    },
  };
}
