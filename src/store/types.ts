/**
 * The store's interface, as the domain sees it. Nothing here names LMDB: a second backend
 * (PostgreSQL, for operators who outgrow one machine) implements these same few operations.
 *
 * Invariants every backend keeps:
 * - `write(fn)` runs `fn` synchronously inside one transaction; every put and remove in it lands
 *   together or not at all; the promise resolves only once the transaction is durable on disk.
 *   If it rejects, nothing of `fn` was applied, and the caller must fail closed.
 * - put and remove are only legal inside `write`.
 * - Reads see the latest committed state, including writes made by other processes (the CLI
 *   writes freezes and keys while the server runs): no backend caches values.
 * - Keys are a string or a tuple of strings and numbers, ordered element by element.
 */

import type { Tables } from './dbs.js';

export type { Tables } from './dbs.js';

export type KeyPart = string | number;
export type Key = KeyPart | KeyPart[];

export interface ScanOptions {
  /** Only keys after this last element (exclusive), for cursor pagination. */
  after?: KeyPart;
  limit?: number;
  reverse?: boolean;
  /**
   * Only entries whose whole key sorts after this key (exclusive), in key order: a cursor that
   * resumes a walk where the last page ended, at any depth (the sweeper's). Not with `after` or
   * `reverse`.
   */
  startAfter?: KeyPart[];
}

export interface Table<V> {
  get(key: Key): V | undefined;
  has(key: Key): boolean;
  put(key: Key, value: V): void;
  remove(key: Key): void;
  /** Entries whose tuple key starts with `prefix`, in key order. */
  scan(prefix: KeyPart[], options?: ScanOptions): Array<{ key: KeyPart[]; value: V }>;
}

export interface Store {
  readonly tables: Tables;
  write<T>(fn: () => T): Promise<T>;
  /**
   * False from a write that failed because the store cannot grow (disk or quota full, read-only
   * disk) until a write succeeds again; readiness reports it.
   */
  writable(): boolean;
  /** The schema version recorded in the store (0 for an empty store). */
  schemaVersion(): number;
  /** A consistent copy of the whole store to `file`, safe while others write. */
  backup(file: string): Promise<void>;
  close(): Promise<void>;
}
