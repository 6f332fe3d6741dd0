import { StoreError } from './errors.js';
import type { KvStore, ReadTable, ReadTables } from './kv.js';
import { tableNames } from './tables.js';

/**
 * Damage inside an LMDB file that the check before mapping (file-check.ts) cannot see: a page
 * deep in a tree zeroed or overwritten. LMDB notices it only when a read reaches that page, and
 * answers with one of its own codes (MDB_CORRUPTED "Located page was wrong type", say). Such an
 * error is turned into a StoreError 'damaged' (the CLI's `store_damaged`, exit 3; the server's
 * 503 store_unavailable), and the store remembers it: readiness reports it from then on, since
 * no retry reads that page differently.
 */

// MDB_PAGE_NOTFOUND, MDB_CORRUPTED, MDB_PANIC, MDB_INVALID, MDB_INCOMPATIBLE (lmdb.h).
const DAMAGE_CODES = new Set<unknown>([-30797, -30796, -30795, -30793, -30784]);
const DAMAGE_TEXT = /^MDB_(PAGE_NOTFOUND|CORRUPTED|PANIC|INVALID|INCOMPATIBLE)\b/;
const LMDB_TEXT = /^MDB_[A-Z_]+:/;

/**
 * Whether `err` (or the cause it carries) is LMDB reporting a damaged file; once damage was met,
 * any error of LMDB's own (the read transaction it broke answers MDB_BAD_TXN from then on).
 */
export function isLmdbDamage(err: unknown, after = false): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (DAMAGE_CODES.has(code) || DAMAGE_TEXT.test(e.message)) return true;
    if (after && (LMDB_TEXT.test(e.message) || (typeof code === 'number' && code <= -30700 && code >= -30800)))
      return true;
  }
  return false;
}

export interface DamageAware extends KvStore {
  /** True once a read or write of this store met damage inside its file. */
  damaged(): boolean;
}

function damagedError(file: string, err: unknown): StoreError {
  const detail = (err instanceof StoreError ? err.cause : err) as Error;
  return new StoreError('damaged', `store file damaged: restore from backup (${file}: ${detail.message})`, {
    cause: err,
  });
}

/**
 * The store `open` opens (it reads the tables' names, and may meet damage already), with LMDB's
 * damage errors turned into StoreError 'damaged' (see above).
 */
export function openGuarded(file: string, open: () => KvStore): DamageAware {
  let kv: KvStore;
  try {
    kv = open();
  } catch (err) {
    throw isLmdbDamage(err) ? damagedError(file, err) : err;
  }
  let damaged = false;
  const guard = <T>(work: () => Promise<T>): Promise<T> =>
    work().catch((err: unknown) => {
      if (!isLmdbDamage(err, damaged)) throw err;
      damaged = true;
      throw damagedError(file, err);
    });
  const table = <V>(inner: ReadTable<V>): ReadTable<V> => ({
    get: (key) => guard(() => inner.get(key)),
    getMany: (keys) => guard(() => inner.getMany(keys)),
    has: (key) => guard(() => inner.has(key)),
    scan: (prefix, options) => guard(() => inner.scan(prefix, options)),
  });
  const tables = Object.fromEntries(
    tableNames.map((name) => [name, table(kv.tables[name] as ReadTable<unknown>)]),
  ) as unknown as ReadTables;
  return {
    backend: kv.backend,
    tables,
    write: (fn, options) => guard(() => kv.write(fn, options)),
    writable: () => !damaged && kv.writable(),
    damaged: () => damaged,
    schemaVersion: () => guard(() => kv.schemaVersion()),
    backup: (to) => guard(() => kv.backup(to)),
    close: () => kv.close(),
  };
}
