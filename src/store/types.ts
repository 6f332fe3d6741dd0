/**
 * The store's interface, as the domains see it. Nothing here names LMDB or PostgreSQL: both
 * backends (kv-lmdb.ts, kv-postgres.ts) implement the few operations of kv.ts, and open.ts gives
 * the domains this one shape over either.
 *
 * Invariants every backend keeps (kv.ts states them in full):
 * - `write(fn)` runs `fn` in one transaction; every put and remove in it lands together or not at
 *   all; the promise resolves only once the transaction is durable. If it rejects, nothing of `fn`
 *   was applied, and the caller must fail closed.
 * - `fn` may run more than once (a backend retries it when a concurrent writer changed what it
 *   read), so it does nothing but store reads and writes and pure computation: signing, network
 *   calls, timers, logging and metrics happen before or after it, never inside.
 * - Inside `fn` (its whole async call tree), `store.tables` reads and writes that transaction: a
 *   repo needs no transaction handle. Outside any write, reads see the latest committed state,
 *   other processes' commits included (no backend caches values), and put/remove reject.
 * - A `write` started inside another write's function joins that write (one transaction).
 * - Keys are a string or a tuple of strings and numbers, ordered element by element.
 */

import type { WindowCounters } from './counters.js';
import type { TableName, Tables } from './tables.js';

export type { Tables } from './tables.js';

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
  get(key: Key): Promise<V | undefined>;
  /**
   * Several keys of this table at once, answered in the order asked: on PostgreSQL one statement
   * (inside a write, keys it already read or wrote are answered without asking).
   */
  getMany(keys: readonly Key[]): Promise<Array<V | undefined>>;
  has(key: Key): Promise<boolean>;
  /** Only inside `store.write`. */
  put(key: Key, value: V): Promise<void>;
  /** Only inside `store.write`. */
  remove(key: Key): Promise<void>;
  /** Entries whose tuple key starts with `prefix`, in key order. */
  scan(prefix: KeyPart[], options?: ScanOptions): Promise<Array<{ key: KeyPart[]; value: V }>>;
}

/**
 * How a write meets concurrent writers beyond the default (every write is serializable with every
 * other). `serializeOn` names rows, each `[table, key]`, that stand for all the state the write
 * decides on (the gate: the deciding agent's record): writes naming the same row run one after
 * another, and writes naming different rows never fail each other. What such a write read and
 * then writes is still checked (a row another write changed since: it runs again), and what it
 * read beside those rows is what was committed when it read it. LMDB has one writer at a time:
 * the option changes nothing there.
 */
export interface WriteOptions {
  serializeOn?: ReadonlyArray<readonly [TableName, Key]>;
}

export interface Store {
  /** Which backend holds the data: readiness, `svc status` and the metrics name it. */
  readonly backend: 'lmdb' | 'postgres';
  /** Every table; inside a write function, the write's own transaction. */
  readonly tables: Tables;
  /** Runs `fn` in one atomic, durable transaction; it may run more than once (see above). */
  write<T>(fn: (tx: Tables) => Promise<T>, options?: WriteOptions): Promise<T>;
  /**
   * The rate limits' window counters, shared by every process on this store (counters.ts): not
   * durable like a write, and never part of one.
   */
  readonly counters: WindowCounters;
  /** Whether the calling code runs inside a write function (repos assert it for put-only paths). */
  inWrite(): boolean;
  /**
   * An identity of the write the calling code runs in (undefined outside one): for a repo that
   * must order its own steps within one write, such as the ledger's appends (each reads the head
   * the previous one wrote).
   */
  currentWrite(): object | undefined;
  /**
   * False from a write that failed because the store cannot grow (disk or quota full, read-only
   * disk) or cannot be reached, until a write succeeds again; readiness reports it.
   */
  writable(): boolean;
  /** True once a read or write met damage inside the store file (it stays so: restore from backup). */
  damaged?(): boolean;
  /** The schema version recorded in the store (0 for an empty store). */
  schemaVersion(): Promise<number>;
  /** A consistent copy of the whole store to `file`, safe while others write (LMDB only). */
  backup(file: string): Promise<void>;
  close(): Promise<void>;
}

/** A store-wide value of the `meta` table other than the schema version (tables.ts). */
export interface MetaValue {
  [k: string]: unknown;
}
