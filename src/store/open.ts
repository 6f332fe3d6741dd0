import { AsyncLocalStorage } from 'node:async_hooks';
import { join, resolve } from 'node:path';
import { invalidField } from '../errors/app-error.js';
import type { WindowCounters } from './counters.js';
import { StoreError } from './errors.js';
import type { KvStore, WriteTx } from './kv.js';
import type { LmdbOpenOptions } from './kv-lmdb.js';
import { tableNames, type TableName, type Tables } from './tables.js';
import { keyFits, MAX_KEY_BYTES } from './tuple-key.js';
import type { Key, KeyPart, ScanOptions, Store, Table, WriteOptions } from './types.js';

/**
 * The store the app uses (types.ts) over either backend (kv.ts).
 *
 * The transaction is ambient: `write(fn)` runs `fn` in an AsyncLocalStorage context holding the
 * backend's transaction, and every table read or write made in `fn`'s call tree (through any
 * repo, however deep) goes to it. So a repo is written once, with no transaction handle threaded
 * through every domain, and a read inside a write is one the backend validates (LMDB) or holds in
 * its snapshot (PostgreSQL). Work that merely *started* inside a write and outlives it (a timer, a
 * delivery scheduled for later) sees the transaction closed and falls back to the committed store:
 * its reads see the latest commit and its writes begin their own transaction.
 */

interface Ambient {
  tx: WriteTx;
  open: boolean;
}

const ambient = new AsyncLocalStorage<Ambient>();

function current(): Ambient | undefined {
  const here = ambient.getStore();
  return here?.open ? here : undefined;
}

function outsideWrite(): never {
  throw new Error('store writes are only allowed inside store.write()');
}

/**
 * A key longer than any the store takes comes from input (an id, a name, a cursor) that no record
 * has: 400 invalid_request, never the backend's own error. Routes bound their ids first; this is
 * what every key, whatever its route, meets.
 */
function keyTooLong(): Promise<never> {
  return Promise.reject(
    invalidField(null, `an identifier in this request is too long (a store key holds at most ${MAX_KEY_BYTES} bytes)`),
  );
}

class AmbientTable<V> implements Table<V> {
  private readonly name: TableName;
  private readonly kv: KvStore;

  constructor(name: TableName, kv: KvStore) {
    this.name = name;
    this.kv = kv;
  }

  private tx(): Table<V> | undefined {
    return current()?.tx[this.name] as Table<V> | undefined;
  }

  get(key: Key): Promise<V | undefined> {
    if (!keyFits(key)) return keyTooLong();
    return (this.tx() ?? (this.kv.tables[this.name] as unknown as Table<V>)).get(key);
  }

  getMany(keys: readonly Key[]): Promise<Array<V | undefined>> {
    if (!keys.every((key) => keyFits(key))) return keyTooLong();
    return (this.tx() ?? (this.kv.tables[this.name] as unknown as Table<V>)).getMany(keys);
  }

  has(key: Key): Promise<boolean> {
    if (!keyFits(key)) return keyTooLong();
    return (this.tx() ?? (this.kv.tables[this.name] as unknown as Table<V>)).has(key);
  }

  scan(prefix: KeyPart[], options?: ScanOptions): Promise<Array<{ key: KeyPart[]; value: V }>> {
    if (
      !keyFits(options?.after === undefined ? prefix : [...prefix, options.after]) ||
      (options?.startAfter !== undefined && !keyFits(options.startAfter))
    )
      return keyTooLong();
    return (this.tx() ?? (this.kv.tables[this.name] as unknown as Table<V>)).scan(prefix, options);
  }

  async put(key: Key, value: V): Promise<void> {
    if (!keyFits(key)) return keyTooLong();
    return (this.tx() ?? outsideWrite()).put(key, value);
  }

  async remove(key: Key): Promise<void> {
    if (!keyFits(key)) return keyTooLong();
    return (this.tx() ?? outsideWrite()).remove(key);
  }
}

/**
 * The domains' store over a backend's: the ambient transaction (above) and nothing else; the
 * rate limits' counters beside it (closed with it).
 */
export function ambientStore(kv: KvStore, counters: WindowCounters): Store {
  const tables = Object.freeze(
    Object.fromEntries(tableNames.map((name) => [name, new AmbientTable(name, kv)])),
  ) as unknown as Tables;
  return {
    backend: kv.backend,
    tables,
    async write<T>(fn: (tx: Tables) => Promise<T>, options?: WriteOptions): Promise<T> {
      const outer = current();
      // A write inside a write joins it: one transaction, committed by the outermost.
      if (outer) return fn(tables);
      return kv.write(async (tx) => {
        const here: Ambient = { tx, open: true };
        try {
          return await ambient.run(here, () => fn(tables));
        } finally {
          here.open = false;
        }
      }, options);
    },
    inWrite: () => current() !== undefined,
    currentWrite: () => current(),
    writable: () => kv.writable(),
    damaged: () => (kv as { damaged?: () => boolean }).damaged?.() ?? false,
    schemaVersion: () => kv.schemaVersion(),
    backup: (file) => kv.backup(file),
    counters,
    async close() {
      await counters.close().catch(() => undefined);
      await kv.close();
    },
  };
}

export interface OpenOptions extends LmdbOpenOptions {
  /**
   * The `--store` URL (or SVC_STORE_URL, docs/operations.md): absent or `lmdb:` is the LMDB file under the
   * data dir; `postgres://user:pass@host:port/db` or `postgresql://…` is PostgreSQL.
   */
  url?: string | undefined;
}

/**
 * Opens the store the options name. Anything but LMDB or PostgreSQL is refused with a message that
 * never repeats the URL (it may hold a password).
 */
export async function openStore(dataDir: string, options: OpenOptions = {}): Promise<Store> {
  const kv = await openBackend(dataDir, options);
  // The counters open their file or connections on their first count, never for a command that
  // only reads (no file is made beside a store opened read-only).
  const counters =
    kv.backend === 'postgres'
      ? (await import('./counters-postgres.js')).openPostgresCounters(options.url!.trim())
      : (await import('./counters-lmdb.js')).openLmdbCounters(dataDir);
  return ambientStore(kv, counters);
}

export async function openBackend(dataDir: string, options: OpenOptions = {}): Promise<KvStore> {
  const url = options.url?.trim() ?? '';
  // Each backend's module (and its driver, lmdb or pg) is loaded only when the URL names it.
  if (url === '' || url === 'lmdb:') {
    const [{ openKvLmdbStore, STORE_FILE }, { openGuarded }] = await Promise.all([
      import('./kv-lmdb.js'),
      import('./damage.js'),
    ]);
    return openGuarded(join(resolve(dataDir), STORE_FILE), () => openKvLmdbStore(dataDir, options));
  }
  if (/^postgres(ql)?:\/\//i.test(url)) return (await import('./kv-postgres.js')).openKvPostgresStore(url);
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0] ?? 'that value';
  throw new StoreError(
    'cannot_open',
    `unknown store ${scheme}: use lmdb: (the file under the data dir) or postgres://user:password@host:port/database`,
  );
}
