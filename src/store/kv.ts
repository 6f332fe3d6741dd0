/**
 * What a store backend implements (open.ts gives the domains types.ts's interface over it). Two backends implement it: LMDB (kv-lmdb.ts, one machine, the same file as today)
 * and PostgreSQL (kv-postgres.ts, past one machine). Nothing here names either.
 *
 * Invariants every backend keeps:
 * - `write(fn)` runs `fn(tx)`; every put and remove of it lands together or not at all, and the
 *   promise resolves only once the transaction is durable (flushed to disk; committed by the
 *   database). If it rejects, nothing of `fn` was applied, and the caller must fail closed.
 * - `fn` may run more than once: a backend retries it when a concurrent writer changed what it
 *   read (LMDB: optimistic validation; PostgreSQL: serialization failure or deadlock). So `fn` does
 *   nothing but store reads and writes through `tx` and pure computation: signing, network calls,
 *   timers, logging and id minting happen before or after it, never inside.
 * - Throwing from `fn` aborts it with nothing applied. A domain error (name 'AppError') passes
 *   through unchanged; a store fault becomes a StoreError with a code ('no_space', 'unavailable',
 *   'conflict', 'write_failed': the HTTP layer answers 503 to all but 'write_failed').
 * - put and remove exist only on `tx`. Reads outside a write (`store.tables`) see the latest
 *   committed state, including other processes' commits (the CLI writes freezes and revokes keys
 *   while the server runs): no backend caches values.
 * - Keys are a string or a tuple of strings and numbers, ordered element by element: numbers
 *   before strings, numbers by value, strings by their UTF-8 bytes, a tuple before its extensions.
 *   `scan(prefix)` lists the keys that extend the prefix, in that order.
 */

import type { Key, KeyPart, ScanOptions, Table, WriteOptions } from './types.js';
import type { TableName, TableValue, Tables } from './tables.js';

export type { Key, KeyPart, ScanOptions, WriteOptions } from './types.js';
export { tableNames, tableSpec, type TableName, type TableValue } from './tables.js';

export interface Entry<V> {
  key: KeyPart[];
  value: V;
}

/** A table as read outside a write: every read sees the latest commit. */
export interface ReadTable<V> {
  get(key: Key): Promise<V | undefined>;
  /** Several keys at once (one statement on PostgreSQL), answered in the order asked. */
  getMany(keys: readonly Key[]): Promise<Array<V | undefined>>;
  has(key: Key): Promise<boolean>;
  /** Entries whose tuple key starts with `prefix`, in key order. */
  scan(prefix: KeyPart[], options?: ScanOptions): Promise<Array<Entry<V>>>;
}

/** A table inside a write: reads see the write's own puts and removes. */
export type WriteTable<V> = Table<V>;

export type ReadTables = { readonly [N in TableName]: ReadTable<TableValue<N>> };

/** What a write function is given: every table, read and written in one transaction. */
export type WriteTx = Tables;

export interface KvStore {
  /** Which backend, for readiness and `svc status`: 'lmdb' or 'postgres'. */
  readonly backend: 'lmdb' | 'postgres';
  readonly tables: ReadTables;
  /** Runs `fn` in one atomic, durable transaction (see the invariants above: it may run again). */
  write<T>(fn: (tx: WriteTx) => Promise<T>, options?: WriteOptions): Promise<T>;
  /**
   * False from a write that failed because the store cannot grow (disk or quota full, read-only
   * disk) or cannot be reached, until a write succeeds again; readiness reports it.
   */
  writable(): boolean;
  /** The schema version recorded in the store (0 for an empty store). */
  schemaVersion(): Promise<number>;
  /** A consistent copy of the whole store to `file` (LMDB; PostgreSQL refuses: use pg_dump). */
  backup(file: string): Promise<void>;
  close(): Promise<void>;
}

/** Errors thrown on purpose by a write function (domain errors) pass through unchanged. */
export function isDomainError(err: unknown): boolean {
  return err instanceof Error && err.name === 'AppError';
}
