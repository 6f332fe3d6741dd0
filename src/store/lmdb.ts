import { chmodSync, existsSync, mkdirSync, statfsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';
import { AppError } from '../errors/app-error.js';
import { systemError } from '../errors/system.js';
import { tableNames, type Tables } from './dbs.js';
import { StoreError } from './errors.js';
import { damageOf } from './file-check.js';
import type { Key, KeyPart, ScanOptions, Store, Table } from './types.js';

/** The LMDB backend: one environment file under the data dir, one named sub-database per table. */

export const STORE_FILE = 'svc.mdb';
// Sorts after every id and every string key this service writes (ids are ASCII).
const KEY_END = '\uffff';

class LmdbTable<V> implements Table<V> {
  constructor(
    private readonly db: Database<V, Key>,
    private readonly inWrite: () => boolean,
  ) {}

  get(key: Key): V | undefined {
    return this.db.get(key);
  }

  has(key: Key): boolean {
    return this.db.doesExist(key);
  }

  put(key: Key, value: V): void {
    this.assertWriting();
    // Inside the transaction callback this joins the open write transaction.
    this.db.putSync(key, value);
  }

  remove(key: Key): void {
    this.assertWriting();
    this.db.removeSync(key);
  }

  scan(prefix: KeyPart[], options: ScanOptions = {}): Array<{ key: KeyPart[]; value: V }> {
    if (options.startAfter !== undefined) return this.scanFrom(prefix, options.startAfter, options.limit);
    const low = options.after === undefined ? prefix : [...prefix, options.after];
    const high = [...prefix, KEY_END];
    // The empty prefix is the whole table, whatever its keys (strings or tuples).
    const range =
      prefix.length === 0 && options.after === undefined
        ? { reverse: options.reverse ?? false }
        : options.reverse
          ? { start: options.after === undefined ? high : low, end: prefix, reverse: true }
          : { start: low, end: high };
    const out: Array<{ key: KeyPart[]; value: V }> = [];
    for (const { key, value } of this.db.getRange(range)) {
      const tuple = (Array.isArray(key) ? key : [key]) as KeyPart[];
      if (options.after !== undefined && tuple[prefix.length] === options.after) continue;
      out.push({ key: tuple, value });
      if (options.limit !== undefined && out.length >= options.limit) break;
    }
    return out;
  }

  /** Entries under `prefix` after the key `from` (a whole key; one element is a string key). */
  private scanFrom(prefix: KeyPart[], from: KeyPart[], limit?: number): Array<{ key: KeyPart[]; value: V }> {
    // A one-element tuple and the bare string sort alike, so `from` serves string-keyed tables too.
    const range = prefix.length === 0 ? { start: from } : { start: from, end: [...prefix, KEY_END] };
    const out: Array<{ key: KeyPart[]; value: V }> = [];
    for (const { key, value } of this.db.getRange(range)) {
      const tuple = (Array.isArray(key) ? key : [key]) as KeyPart[];
      if (tuple.length === from.length && tuple.every((part, i) => part === from[i])) continue;
      if (prefix.some((part, i) => tuple[i] !== part)) continue;
      out.push({ key: tuple, value });
      if (limit !== undefined && out.length >= limit) break;
    }
    return out;
  }

  private assertWriting(): void {
    if (!this.inWrite()) throw new Error('store writes are only allowed inside store.write()');
  }
}

export interface OpenOptions {
  /**
   * Create the data dir and the store file when they do not exist (`svc serve`, `svc init`, tests).
   * Without it a missing store is `store_not_found`, naming the directory looked in.
   */
  create?: boolean;
  /**
   * Open LMDB read-only: nothing in the data dir is written or created, so a read-only copy (or
   * mount) of a data dir can be read. Writes fail.
   */
  readOnly?: boolean;
}

export function openLmdbStore(dataDir: string, options: OpenOptions = {}): Store {
  const create = options.create ?? true;
  const readOnly = options.readOnly ?? false;
  const dir = resolve(dataDir);
  const file = join(dir, STORE_FILE);
  prepareDataDir(dir, { create: create && !readOnly, chmod: !readOnly });
  let damage: string | null;
  try {
    damage = existsSync(file) ? damageOf(file) : null;
  } catch (err) {
    throw systemError(err, { kind: 'data-dir', path: dir }) ?? err;
  }
  if (damage !== null)
    throw new AppError('store_damaged', { message: `store file damaged: restore from backup (${file}: ${damage})` });
  if (!existsSync(file) && (!create || readOnly)) throw storeNotFound(dir);
  if (!readOnly) ensureRoomToOpen(dir);
  let root: RootDatabase;
  try {
    root = open({
      path: file,
      maxDbs: 64,
      // No value cache: other processes (the CLI) write while the server runs.
      cache: false,
      compression: false,
      // Commit and flush are distinct; write() awaits the flush before it resolves.
      overlappingSync: true,
      readOnly,
    });
    if (!readOnly) {
      // LMDB creates its files with the process umask.
      for (const name of [STORE_FILE, `${STORE_FILE}-lock`]) {
        if (existsSync(join(dir, name))) chmodSync(join(dir, name), 0o600);
      }
    }
  } catch (err) {
    const known = systemError(err, { kind: 'data-dir', path: dir });
    if (known) throw known;
    throw new StoreError('cannot_open', `cannot open the store in ${dir}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  let writing = false;
  const inWrite = () => writing;
  let writable = !readOnly;
  const tables = Object.fromEntries(
    tableNames.map((name) => [
      name,
      // JSON values: every record is plain JSON, and it decodes fastest (about 2 µs a read).
      openTable(root, name, inWrite),
    ]),
  ) as unknown as Tables;

  return {
    tables,
    async write<T>(fn: () => T): Promise<T> {
      let result!: T;
      try {
        // A child transaction of lmdb-js's batched write: concurrent writes share one commit (and
        // one flush), yet each is atomic on its own. A plain batched `transaction()` would commit
        // whatever a callback put before it threw, together with the rest of the batch.
        await root.childTransaction(() => {
          writing = true;
          try {
            result = fn();
          } finally {
            writing = false;
          }
        });
        // Acknowledge only what is on disk: a commit is visible before it is durable.
        await root.flushed;
        writable = true;
      } catch (err) {
        if (err instanceof StoreError) throw err;
        if (isDomainError(err)) throw err;
        // The failed batch's own commit promise rejects as well; observed here, so that it cannot
        // end the process as an unhandled rejection.
        Promise.resolve(root.committed).catch(() => undefined);
        Promise.resolve(root.flushed).catch(() => undefined);
        const cause = await commitCause(err);
        if (outOfSpace(cause)) writable = false;
        throw new StoreError(
          outOfSpace(cause) ? 'no_space' : 'write_failed',
          `store write failed: ${messageOf(cause)}`,
          {
            cause,
          },
        );
      }
      return result;
    },
    writable: () => writable,
    schemaVersion() {
      const version = tables.meta.get('schemaVersion');
      return typeof version === 'number' ? version : 0;
    },
    async backup(file: string) {
      // Compacted: freed pages (old password hashes, ended sessions) are not copied along.
      await root.backup(file, true);
    },
    async close() {
      await root.flushed;
      await root.close();
    },
  };
}

/**
 * One table. Read-only, a table the store does not have yet (made by an older svc) reads as empty:
 * lmdb-js gives no handle for a sub-database it cannot create.
 */
function openTable(root: RootDatabase, name: string, inWrite: () => boolean): Table<unknown> {
  const db = root.openDB({ name, cache: false, compression: false, encoding: 'json' }) as
    Database<unknown, Key> | undefined;
  return db ? new LmdbTable(db, inWrite) : EMPTY_TABLE;
}

const EMPTY_TABLE: Table<unknown> = {
  get: () => undefined,
  has: () => false,
  put() {
    throw new Error('the store is open read-only');
  },
  remove() {
    throw new Error('the store is open read-only');
  },
  scan: () => [],
};

/**
 * The data dir, made private to the operator whatever existed before (mkdir's mode applies only
 * when it creates the folder). Errors of the file system become the catalogue's (not a directory,
 * permission denied, disk full); a missing dir is created only when asked.
 */
function prepareDataDir(dir: string, options: { create: boolean; chmod: boolean }): void {
  try {
    let stats = statOrUndefined(dir);
    if (!stats) {
      if (!options.create) throw storeNotFound(dir);
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      stats = statSync(dir);
    }
    if (!stats.isDirectory())
      throw new AppError('not_a_directory', { message: `the data directory ${dir} is a file, not a directory` });
    // Group and other lose their access; the owner's own bits are left as they are (a read-only
    // copy stays read-only).
    if (options.chmod && (stats.mode & 0o077) !== 0) chmodSync(dir, stats.mode & 0o700);
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw systemError(err, { kind: 'data-dir', path: dir }) ?? err;
  }
}

/**
 * LMDB maps its lock file (and a new store's first pages) and writes through the mapping: on a
 * full disk that write is a SIGBUS, not an error. So when those files must still be made, the room
 * for them is checked first, and a full disk is `disk_full` (exit 3) with nothing created.
 */
const ROOM_TO_CREATE = 1024 * 1024;
function ensureRoomToOpen(dir: string): void {
  const made = existsSync(join(dir, STORE_FILE)) && existsSync(join(dir, `${STORE_FILE}-lock`));
  if (made) return;
  const fs = statfsSync(dir);
  if (fs.bavail * fs.bsize < ROOM_TO_CREATE)
    throw new AppError('disk_full', {
      message: `no space left on the disk of the data directory ${dir} (less than 1 MiB free)`,
    });
}

function statOrUndefined(path: string) {
  try {
    return statSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

export function storeNotFound(dir: string): AppError {
  return new AppError('store_not_found', { message: `no store in ${dir}` });
}

/**
 * lmdb-js rejects a failed commit with a generic error whose `commitError` promise rejects with
 * the cause (ENOSPC, say) in the same tick. That promise is always handled here: unhandled, its
 * rejection would end the process.
 */
async function commitCause(err: unknown): Promise<unknown> {
  const pending = (err as { commitError?: Promise<unknown> } | null)?.commitError;
  if (!(pending instanceof Promise)) return err;
  const cause = pending.then(
    () => err,
    (reason: unknown) => reason,
  );
  return Promise.race([cause, new Promise((resolve) => setImmediate(() => resolve(err)))]);
}

// ENOSPC, EDQUOT, EROFS (as errno values and as codes), and LMDB's MDB_MAP_FULL.
const NO_SPACE_CODES = new Set<unknown>([28, 122, 30, 'ENOSPC', 'EDQUOT', 'EROFS', -30792, 'MDB_MAP_FULL']);

/** The store cannot grow (the disk or its quota is full, the map is full) or the disk is read-only. */
function outOfSpace(cause: unknown): boolean {
  const code = (cause as { code?: unknown } | null)?.code;
  return (
    NO_SPACE_CODES.has(code) || /No space left|MDB_MAP_FULL|Disk quota|Read-only file system/i.test(messageOf(cause))
  );
}

function messageOf(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}

/** Errors thrown on purpose by the callback (domain errors) pass through unchanged. */
function isDomainError(err: unknown): boolean {
  return err instanceof Error && err.name === 'AppError';
}
