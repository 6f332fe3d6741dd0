import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statfsSync, statSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ABORT, open, type Database, type RootDatabase } from 'lmdb';
import { AppError } from '../errors/app-error.js';
import { systemError } from '../errors/system.js';
import { StoreError } from './errors.js';
import { damageOf, newestTxnid } from './file-check.js';
import { isDomainError, type Entry, type KvStore, type ReadTable, type WriteTable, type WriteTx } from './kv.js';
import { tableNames, type TableName } from './tables.js';
import { compareKeys, hasPrefix, toTuple } from './tuple-key.js';
import type { Key, KeyPart, ScanOptions } from './types.js';

/**
 * The LMDB backend of the asynchronous interface: the same file, named databases and JSON values
 * as today's synchronous backend (lmdb.ts), so existing stores and migrations keep working and the
 * two can open one file side by side.
 *
 * Why a per-process queue with optimistic validation. lmdb-js runs a transaction callback on the
 * main thread while it holds LMDB's single write lock (across processes). It does accept an async
 * callback, but holds that lock, and the batch every concurrent request joins, across each await:
 * one slow write function would stall every writer of every process (the CLI included), and
 * concurrent requests would no longer share one commit and one flush. So a write function never
 * runs inside an LMDB transaction:
 * - write functions of this process run one at a time, in a queue (they are only store reads and
 *   writes and pure computation, so they are short). Each one's puts and removes are buffered in
 *   memory. When it ends, its commit is handed to lmdb-js (below) and the next function starts at
 *   once, without waiting for that commit: concurrent requests still share one commit and one flush.
 * - its reads see, in order: its own buffered writes; the buffered writes of this process's earlier
 *   functions whose commit is still pending ("in flight", newest first); the latest commit of LMDB
 *   (other processes' included). Each read is recorded with the stored text it saw (a get: the
 *   value's JSON text or absence; a scan: the query and every key and text it returned, in flight
 *   included).
 * - its commit is one synchronous lmdb-js `childTransaction` (inside the write lock, in the current
 *   batch, after the earlier functions' children, which lmdb-js runs in order) that re-reads the
 *   read set; if every text is the same the buffered writes are applied there, else the child does
 *   nothing and the function runs again through the queue (at most MAX_ATTEMPTS times, then a
 *   StoreError 'conflict'). A read of an earlier function's in-flight write validates exactly when
 *   that function committed; if it did not, the reader runs again too. Re-reading inside the write
 *   lock sees every commit made before it, of this process's batch and of other processes, so
 *   validated writes are serializable, and within one process they never conflict with each other:
 *   only another process's commit (the CLI, another worker) can send a function round again.
 * - a function that throws is checked the same way, nothing applied: its throw is the answer only
 *   if what it read still holds (see run()).
 * - the promise resolves after `root.flushed`: acknowledged means on disk, as before.
 * Entry versions (lmdb-js `useVersions`) would make validation cheaper but change the on-disk
 * format; comparing the stored text keeps it. Reads outside a write are a plain `get` on the named database
 * (the latest commit: a write acknowledged is visible, one in flight is not yet).
 */

export const STORE_FILE = 'svc.mdb';
const MAX_ATTEMPTS = 32;
/**
 * Empty transactions flushed() tries, after later commits failed, before it gives up: refused ones
 * (the disk refuses even those), and in all (other batches' faults wake it too, and say nothing of
 * whether its own commit is on disk).
 */
const SETTLE_REFUSED = 3;
const SETTLE_ROUNDS = 64;
// Sorts after every id and every string key this service writes (ids are ASCII).
const KEY_END = '\uffff';
const REMOVED = Symbol('removed');

/** How a write function ended: its result, or what it threw. */
type Outcome<T> = { ok: true; result: T } | { ok: false; error: unknown };

/** A buffered put (the JSON text it will be on disk) or remove. */
interface Pending {
  key: Key;
  text: string | typeof REMOVED;
}

/**
 * One table seen twice: `json` decodes values (reads outside a write); `text` gives and takes the
 * stored JSON text as a string, which a write function's reads record and validation compares.
 */
type Dbs = { json: Database<unknown, Key>; text: Database<string, Key> };

interface GetRead {
  dbs: Dbs;
  key: Key;
  text: string | undefined;
}
interface ScanRead {
  dbs: Dbs;
  prefix: KeyPart[];
  options: ScanOptions;
  limit: number | undefined;
  entries: Text[];
}

/** An entry as a scan inside a write sees it: the key and the stored JSON text. */
interface Text {
  key: KeyPart[];
  text: string;
}

/** The range lmdb-js walks for a scan, and the entries to skip in it (today's semantics). */
function* scanRange<V>(
  db: Database<V, Key>,
  prefix: KeyPart[],
  options: ScanOptions,
  limit: number | undefined,
): Generator<{ key: KeyPart[]; value: V }> {
  let range: { start?: Key; end?: Key; reverse?: boolean };
  if (options.startAfter !== undefined) {
    range =
      prefix.length === 0 ? { start: options.startAfter } : { start: options.startAfter, end: [...prefix, KEY_END] };
  } else {
    const low = options.after === undefined ? prefix : [...prefix, options.after];
    const high = [...prefix, KEY_END];
    range =
      prefix.length === 0 && options.after === undefined
        ? { reverse: options.reverse ?? false }
        : options.reverse
          ? { start: options.after === undefined ? high : low, end: prefix, reverse: true }
          : { start: low, end: high };
  }
  let n = 0;
  for (const { key, value } of db.getRange(range)) {
    const tuple = toTuple(key as Key);
    if (options.startAfter !== undefined) {
      if (compareKeys(tuple, options.startAfter) === 0 || !hasPrefix(tuple, prefix)) continue;
    } else if (options.after !== undefined && tuple[prefix.length] === options.after) continue;
    yield { key: tuple, value };
    if (limit !== undefined && ++n >= limit) return;
  }
}

/** Whether a buffered key belongs to a scan's answer (the same filter scanRange applies). */
function inScan(key: KeyPart[], prefix: KeyPart[], options: ScanOptions): boolean {
  if (!hasPrefix(key, prefix)) return false;
  if (options.startAfter !== undefined) return compareKeys(key, options.startAfter) > 0;
  if (options.after === undefined) return !(options.reverse && key.length === prefix.length && prefix.length > 0);
  const element = key[prefix.length];
  if (element === undefined) return false;
  const order = compareKeys([element], [options.after]);
  return options.reverse ? order < 0 : order > 0;
}

const decode = (text: string): unknown => JSON.parse(text);

/** A table missing from a store opened read-only: nothing to read, nothing may be written. */
const EMPTY_DB = {
  get: () => undefined,
  doesExist: () => false,
  getRange: () => [],
  putSync() {
    throw new Error('the store is open read-only');
  },
  removeSync() {
    throw new Error('the store is open read-only');
  },
};
const EMPTY = { json: EMPTY_DB, text: EMPTY_DB } as unknown as Dbs;

class LmdbReadTable<V> implements ReadTable<V> {
  protected readonly dbs: Dbs;
  constructor(dbs: Dbs) {
    this.dbs = dbs;
  }

  async get(key: Key): Promise<V | undefined> {
    return this.dbs.json.get(key) as V | undefined;
  }

  async getMany(keys: readonly Key[]): Promise<Array<V | undefined>> {
    return keys.map((key) => this.dbs.json.get(key) as V | undefined);
  }

  async has(key: Key): Promise<boolean> {
    return this.dbs.json.doesExist(key);
  }

  async scan(prefix: KeyPart[], options: ScanOptions = {}): Promise<Array<Entry<V>>> {
    return [...scanRange(this.dbs.json, prefix, options, options.limit)] as Array<Entry<V>>;
  }
}

class LmdbWriteTable<V> implements WriteTable<V> {
  /** Buffered puts and removes, by the key's JSON text. */
  readonly pending = new Map<string, Pending>();
  private readonly name: TableName;
  private readonly dbs: Dbs;
  private readonly tx: LmdbTx;

  constructor(name: TableName, dbs: Dbs, tx: LmdbTx) {
    this.name = name;
    this.dbs = dbs;
    this.tx = tx;
  }

  async get(key: Key): Promise<V | undefined> {
    this.tx.assertOpen();
    let text: string | typeof REMOVED | undefined;
    // The key's id (its JSON) only when a buffered write could hold it.
    if (this.pending.size > 0 || this.tx.flying.length > 0) {
      const id = JSON.stringify(toTuple(key));
      const own = this.pending.get(id);
      if (own !== undefined) return own.text === REMOVED ? undefined : (decode(own.text) as V);
      text = this.tx.inFlight(this.name, id);
    }
    const seen = text === REMOVED ? undefined : (text ?? this.dbs.text.get(key));
    this.tx.gets.push({ dbs: this.dbs, key, text: seen });
    return seen === undefined ? undefined : (decode(seen) as V);
  }

  /** Each key as `get` reads it (so each is validated at commit and sees this write's own writes). */
  async getMany(keys: readonly Key[]): Promise<Array<V | undefined>> {
    return Promise.all(keys.map((key) => this.get(key)));
  }

  async has(key: Key): Promise<boolean> {
    return (await this.get(key)) !== undefined;
  }

  async scan(prefix: KeyPart[], options: ScanOptions = {}): Promise<Array<Entry<V>>> {
    this.tx.assertOpen();
    const own = [...this.pending.values()].filter(({ key }) => inScan(toTuple(key), prefix, options));
    // Each buffered write in range hides or moves at most one entry of the committed state (and of
    // the earlier in-flight writes): read that many more, then cut to the limit.
    const limit = options.limit === undefined ? undefined : options.limit + own.length;
    const entries = this.committedView(prefix, options, limit);
    this.tx.scans.push({ dbs: this.dbs, prefix, options, limit, entries });
    const seen = own.length === 0 ? entries : merge(entries, own, options, options.limit);
    return seen.map(({ key, text }) => ({ key, value: decode(text) as V }));
  }

  /**
   * A scan of what this write sees under its own writes: LMDB's latest commit with this process's
   * in-flight writes over it. At commit, once the earlier functions' writes are applied, the same
   * scan of LMDB returns exactly these entries unless another writer changed the range.
   */
  private committedView(prefix: KeyPart[], options: ScanOptions, limit: number | undefined): Text[] {
    const over = this.tx.flying.length === 0 ? [] : this.tx.inFlightIn(this.name, prefix, options);
    const wider = limit === undefined ? undefined : limit + over.length;
    const entries: Text[] = [];
    for (const { key, value } of scanRange(this.dbs.text, prefix, options, wider)) entries.push({ key, text: value });
    return over.length === 0 ? entries : merge(entries, over, options, limit);
  }

  async put(key: Key, value: V): Promise<void> {
    this.tx.assertOpen();
    // Kept as the text it will be on disk (lmdb-js's json encoding is JSON.stringify): later
    // changes to the object do not leak in, and a later read of it validates exactly.
    const text = JSON.stringify(value) as string | undefined;
    if (text === undefined) throw new TypeError('a store value must be JSON');
    this.pending.set(JSON.stringify(toTuple(key)), { key, text });
  }

  async remove(key: Key): Promise<void> {
    this.tx.assertOpen();
    this.pending.set(JSON.stringify(toTuple(key)), { key, text: REMOVED });
  }
}

/** `entries` (in scan order) with buffered writes over them, sorted again and cut to `limit`. */
function merge(entries: Text[], over: Pending[], options: ScanOptions, limit: number | undefined): Text[] {
  const merged = new Map<string, Text>();
  for (const entry of entries) merged.set(JSON.stringify(entry.key), entry);
  for (const { key, text } of over) {
    const tuple = toTuple(key);
    if (text === REMOVED) merged.delete(JSON.stringify(tuple));
    else merged.set(JSON.stringify(tuple), { key: tuple, text });
  }
  const out = [...merged.values()].sort((a, b) => compareKeys(a.key, b.key));
  if (options.reverse && options.startAfter === undefined) out.reverse();
  return limit === undefined ? out : out.slice(0, limit);
}

class LmdbTx {
  readonly gets: GetRead[] = [];
  readonly scans: ScanRead[] = [];
  readonly tables: Partial<Record<TableName, LmdbWriteTable<unknown>>> = {};
  open = true;

  /**
   * @param dbs every table's handles
   * @param flying this process's earlier write functions whose commit is pending, oldest first
   *   (the live list: one that commits leaves it, and its writes are then read from LMDB)
   */
  private readonly dbs: Record<TableName, Dbs>;
  readonly flying: readonly LmdbTx[];

  constructor(dbs: Record<TableName, Dbs>, flying: readonly LmdbTx[]) {
    this.dbs = dbs;
    this.flying = flying;
  }

  /** Tables are made on first use: most write functions touch two or three of them. */
  view(): WriteTx {
    return new Proxy({} as WriteTx, {
      get: (_, name) => {
        const table = name as TableName;
        if (!(table in this.dbs)) return undefined;
        return (this.tables[table] ??= new LmdbWriteTable(table, this.dbs[table], this));
      },
    });
  }

  /** The newest in-flight text of a key (REMOVED when removed), or undefined when none is in flight. */
  inFlight(table: TableName, id: string): string | typeof REMOVED | undefined {
    for (let i = this.flying.length - 1; i >= 0; i--) {
      const hit = this.flying[i]!.tables[table]?.pending.get(id);
      if (hit !== undefined) return hit.text;
    }
    return undefined;
  }

  /** The in-flight writes in a scan's range, oldest first (a later one overrides an earlier one). */
  inFlightIn(table: TableName, prefix: KeyPart[], options: ScanOptions): Pending[] {
    const out: Pending[] = [];
    for (const tx of this.flying) {
      const pending = tx.tables[table]?.pending;
      if (pending === undefined) continue;
      for (const write of pending.values()) if (inScan(toTuple(write.key), prefix, options)) out.push(write);
    }
    return out;
  }

  assertOpen(): void {
    if (!this.open) throw new Error('a store transaction was used after its write function ended');
  }

  /** Inside the write lock: whether every read would see the same text now. */
  valid(): boolean {
    for (const read of this.gets) {
      if (read.dbs.text.get(read.key) !== read.text) return false;
    }
    for (const read of this.scans) {
      let i = 0;
      for (const { key, value } of scanRange(read.dbs.text, read.prefix, read.options, read.limit)) {
        const seen = read.entries[i++];
        if (seen === undefined || seen.text !== value || compareKeys(seen.key, key) !== 0) return false;
      }
      if (i !== read.entries.length) return false;
    }
    return true;
  }

  apply(): void {
    for (const [name, table] of Object.entries(this.tables) as Array<[TableName, LmdbWriteTable<unknown>]>) {
      const db = this.dbs[name].text;
      for (const { key, text } of table.pending.values()) {
        if (text === REMOVED) db.removeSync(key);
        else db.putSync(key, text);
      }
    }
  }

  writes(): boolean {
    return Object.values(this.tables).some((t) => t.pending.size > 0);
  }

  reads(): boolean {
    return this.gets.length + this.scans.length > 0;
  }
}

export interface LmdbOpenOptions {
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
  /** Runs of a write function before a StoreError 'conflict' (default MAX_ATTEMPTS; tests lower it). */
  maxAttempts?: number;
}

/**
 * The LMDB environment of the store in `dataDir`, opened after the checks that must come first (the
 * data dir prepared, the file's meta pages read for damage, room to open), with a handle of each
 * table: its JSON view and its stored text (what validation compares).
 */
function openEnvironment(
  dataDir: string,
  create: boolean,
  readOnly: boolean,
): { dir: string; file: string; root: RootDatabase; dbs: Record<TableName, Dbs> } {
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
      // Named databases this process may open (one per table, tables.ts): room to grow; not stored in the file.
      maxDbs: 128,
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
  const dbs = Object.fromEntries(
    tableNames.map((name) => {
      const json = root.openDB({ name, cache: false, compression: false, encoding: 'json' }) as
        Database<unknown, Key> | undefined;
      // Read-only, a table the store does not have yet (made by an older svc) has no handle: it
      // reads as empty.
      if (json === undefined) return [name, EMPTY];
      // The same named database seen as its stored text: what validation compares.
      return [name, { json, text: root.openDB({ name, cache: false, compression: false, encoding: 'string' }) }];
    }),
  ) as unknown as Record<TableName, Dbs>;
  return { dir, file, root, dbs };
}

export function openKvLmdbStore(dataDir: string, options: LmdbOpenOptions = {}): KvStore {
  const create = options.create ?? true;
  const readOnly = options.readOnly ?? false;
  const maxAttempts = options.maxAttempts ?? MAX_ATTEMPTS;
  const { dir, file, root, dbs } = openEnvironment(dataDir, create, readOnly);
  let writable = !readOnly;
  // Commits that failed since the store opened, and the flushes waiting to hear of the next one:
  // lmdb-js never settles a failed commit's flush promise (flushed() and close() below).
  let faults = 0;
  const faultWaiters = new Set<() => void>();
  const noteFault = () => {
    faults++;
    for (const wake of faultWaiters) wake();
  };
  if (!readOnly) handleDetachedFailures(root, noteFault);
  const base = writeBase(file, root);
  // This open may itself have set the lock file's id back (writeBase): mended at once, inside the
  // write lock, so that reads outside a write see the newest commit too. Nothing is written.
  if (!readOnly)
    root.transactionSync(() => {
      base.onNewest();
      return ABORT;
    });
  const tables = Object.fromEntries(tableNames.map((name) => [name, new LmdbReadTable(dbs[name])])) as never;

  /**
   * Validates `tx` in the current batch and, when `apply`, applies its writes there; true once
   * committed (not yet flushed) with every read still what it saw.
   */
  async function commit(tx: LmdbTx, apply = true): Promise<boolean> {
    let ok = false;
    try {
      // A child transaction of lmdb-js's batched write: concurrent writes share one commit and one
      // flush, yet each is atomic on its own.
      await root.childTransaction(() => {
        // A transaction built on a set-back commit id applies nothing: the function runs again.
        if (!base.onNewest()) return;
        ok = tx.valid();
        if (ok && apply) tx.apply();
      });
    } catch (err) {
      throw await writeFault(err);
    }
    return ok;
  }

  /**
   * Resolves once a commit this process made since `seen` faults is on disk. `root.flushed` is the
   * flush of lmdb-js's latest commit, which covers every earlier one, unless that commit failed: then
   * it never settles (or rejects, though ours committed). So a fault since `seen` ends the wait, and
   * an empty transaction (it writes no page, so it commits on a full disk too) makes a newer commit
   * whose flush covers ours; waited for the same way, until one is flushed, three of them are
   * refused, or SETTLE_ROUNDS have gone (faults of other batches do not count against it).
   */
  async function flushed(seen: number): Promise<void> {
    for (let round = 1, refused = 0; ; round++) {
      let wake = () => {};
      const fault = new Promise<false>((resolve) => {
        wake = () => resolve(false);
        if (faults !== seen) wake();
      });
      faultWaiters.add(wake);
      const done = await Promise.race([
        Promise.resolve(root.flushed).then(
          () => true,
          () => false,
        ),
        fault,
      ]).finally(() => faultWaiters.delete(wake));
      if (done) break;
      if (refused === SETTLE_REFUSED || round === SETTLE_ROUNDS)
        throw new StoreError('disk_error', 'store write failed: its flush to disk could not be confirmed');
      seen = faults;
      const committed = await root
        .transaction(() => undefined)
        .then(
          () => true,
          () => false,
        );
      if (!committed) refused++;
    }
    writable = true;
  }

  async function writeFault(err: unknown): Promise<StoreError> {
    noteFault();
    Promise.resolve(root.committed).catch(() => undefined);
    Promise.resolve(root.flushed).catch(() => undefined);
    const cause = await commitCause(err);
    // A commit LMDB refused whose cause is not known (yet) is still the disk refusing it, never a
    // fault of the request: it fails closed like an I/O error.
    const refused = diskFault(cause) || (cause === err && isCommitFailure(err));
    const code = outOfSpace(cause) ? 'no_space' : refused ? 'disk_error' : 'write_failed';
    // The disk refuses writes: readiness says degraded until a write succeeds again.
    if (code !== 'write_failed') writable = false;
    return new StoreError(code, `store write failed: ${messageOf(cause)}`, { cause });
  }

  // The queue (see the opening comment): the function running now finishes before the next starts;
  // `flying` holds the ones that finished and whose commit is pending, oldest first.
  let queue: Promise<unknown> = Promise.resolve();
  const flying: LmdbTx[] = [];
  // A commit landed since the last function started: lmdb-js's read snapshot may predate it.
  let stale = false;

  /**
   * Runs `fn` at its turn in the queue and hands its commit to lmdb-js; resolves, once the function
   * has finished, with its outcome and its commit (true once committed, false when it must run again).
   *
   * A function that throws has read a view that may mix snapshots (lmdb-js renews its read
   * snapshot when a commit lands, this process's or another's, and an earlier function's in-flight
   * writes land meanwhile): a ledger head newer than the records scanned after it, say. Its throw is
   * the answer only if its reads are still what it saw, checked as a commit is (in the batch, after
   * the earlier functions' commits), with nothing applied; else it runs again like a conflict.
   */
  function run<T>(fn: (tx: WriteTx) => Promise<T>): Promise<{ outcome: Outcome<T>; committed: Promise<boolean> }> {
    const turn = queue.then(async () => {
      if (stale) {
        stale = false;
        root.resetReadTxn();
      }
      // The functions in flight when this one starts: a commit that lands meanwhile leaves `flying`,
      // but its writes stay in this function's view whichever snapshot its next read gets.
      const tx = new LmdbTx(dbs, [...flying]);
      let outcome: Outcome<T>;
      try {
        outcome = { ok: true, result: await fn(tx.view()) };
      } catch (error) {
        outcome = { ok: false, error };
      } finally {
        tx.open = false;
      }
      // (A read-only store has no writers to have raced with: its reads were one snapshot.)
      if ((readOnly || !tx.reads()) && (!outcome.ok || !tx.writes()))
        return { outcome, committed: Promise.resolve(true) };
      if (!outcome.ok) {
        const checked = commit(tx, false);
        checked.catch(() => undefined);
        return { outcome, committed: checked };
      }
      flying.push(tx);
      const committed = commit(tx).finally(() => {
        flying.splice(flying.indexOf(tx), 1);
        stale = true;
      });
      // Awaited by the caller; a fault is also seen here first, so it is never unhandled.
      committed.catch(() => undefined);
      return { outcome, committed };
    });
    queue = turn.catch(() => undefined);
    return turn;
  }

  return {
    backend: 'lmdb',
    tables,
    async write<T>(fn: (tx: WriteTx) => Promise<T>): Promise<T> {
      if (!readOnly && !roomToWrite(dir)) {
        writable = false;
        throw new StoreError('no_space', `store write refused: the disk of ${dir} is nearly full`);
      }
      for (let n = 1; n <= maxAttempts; n++) {
        // Another process's commit sent this round again: a jittered pause (up to 1, 2, 4 … ms,
        // capped at 50 ms) so that writers of two processes retrying together fall out of step.
        if (n > 1) await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, 2 ** (n - 1))));
        const seen = faults;
        const { outcome, committed } = await run(fn);
        if (!(await committed)) continue;
        if (!outcome.ok) throw outcome.error;
        await flushed(seen);
        return outcome.result;
      }
      throw new StoreError('conflict', `store write conflicted with concurrent writers ${maxAttempts} times`);
    },
    writable: () => writable,
    async schemaVersion() {
      const version = dbs.meta.json.get('schemaVersion');
      return typeof version === 'number' ? version : 0;
    },
    async backup(file: string) {
      // Compacted: freed pages (old password hashes, ended sessions) are not copied along.
      await root.backup(file, true);
    },
    async close() {
      // lmdb-js never settles the flush promise of a commit that failed, and its close() waits for
      // the latest one: an empty transaction, which writes no page and so commits on a full disk
      // too, makes a newer one that settles.
      if (faults > 0) await root.transaction(() => undefined).catch(() => undefined);
      await root.flushed;
      await root.close();
      base.close();
    },
  };
}

/**
 * Whether the write transaction under way builds on the newest commit; when not, the lock file is
 * mended so that the next one does.
 *
 * The LMDB inside lmdb-js (3.5.6) sets the lock file's "last transaction committed" to the meta page
 * it read as a process opens the store, whatever another process committed meanwhile (upstream LMDB
 * fixed the same in ITS#9496 by doing so only for the first process to open it). So a process
 * opening the store (a replacement worker, the CLI) while a worker commits can set that id back, and
 * the next write transaction, of any process, then builds on the older commit and takes the newer
 * one's place: that commit's writes, acknowledged ones among them, would be gone (seen as a batch of
 * allows missing after a worker was replaced under load). Inside the write lock nobody commits, so
 * the newest commit is the one the file's meta pages name; a transaction whose id does not follow it
 * is built on a set-back id. None of its write functions applies anything (each runs again; the
 * transaction commits nothing, which leaves the meta pages as they are), and the lock file's id is
 * set to the newest commit, as LMDB itself does when it recovers from a writer that died. Checked
 * for each write function (two small reads of the meta pages): a transaction built on a set-back id
 * has the same id as the one before it, so the id cannot tell transactions apart.
 */
function writeBase(file: string, root: RootDatabase): { onNewest(): boolean; close(): void } {
  let data: number | undefined;
  return {
    onNewest() {
      data ??= openSync(file, 'r');
      const latest = newestTxnid(data);
      if (latest === null || BigInt(root.getWriteTxnId()) > latest) return true;
      setLastCommitted(`${file}-lock`, latest);
      return false;
    },
    close() {
      if (data !== undefined) closeSync(data);
      data = undefined;
    },
  };
}

// The lock file's header: a magic number and a format (two u32), then the last committed id (u64).
const LOCK_LAST_COMMITTED = 8;
// Descriptors of lock files, kept open: closing any descriptor of a file drops every POSIX lock this
// process holds on it, LMDB's own included.
const lockFiles = new Map<string, number>();

function setLastCommitted(lockFile: string, txnid: bigint): void {
  let fd = lockFiles.get(lockFile);
  if (fd === undefined) {
    fd = openSync(lockFile, 'r+');
    lockFiles.set(lockFile, fd);
  }
  const bytes = Buffer.alloc(8);
  bytes.writeBigUInt64LE(txnid);
  writeSync(fd, bytes, 0, 8, LOCK_LAST_COMMITTED);
}

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

/**
 * Whether the data dir's disk has room for a write: more free than a reserve, 1/32 of the file
 * system up to 64 MiB. Below it writes are refused before LMDB is asked to grow the file, because
 * lmdb-js 3.5 cannot be trusted with a page write the disk refuses: its message for one is
 * formatted into a 100-byte heap buffer that it can overrun (mdb.c, "Attempting to write page at
 * position …"), and the process then aborts at random. A write already handed over when the disk
 * fills still meets that; the reserve keeps it to the few in flight. Its cost is one statfs.
 */
const RESERVE_MAX = 64 * 1024 * 1024;
export function roomToWrite(dir: string): boolean {
  let fs;
  try {
    fs = statfsSync(dir, { bigint: false });
  } catch {
    // The disk cannot say: LMDB's own write tells.
    return true;
  }
  return fs.bavail * fs.bsize >= Math.min(RESERVE_MAX, (fs.blocks * fs.bsize) / 32);
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
 * A failed commit must reach only the writes that awaited it. lmdb-js also rejects two promises
 * nobody awaits (kriszyp/lmdb-js#368), each an unhandled rejection that ends the process under
 * Node's default: the commit promise of the instruction that opens each event turn's batch (made in
 * its own queued task; a failing batch rejects it with "Commit failed"), and the `commitError`
 * promise that error carries (the cause: ENOSPC, EIO). The `beforecommit` event fires in that task
 * just before the batch is opened; a microtask queued then runs once the task ends, and handles the
 * batch's commit promise and, if it fails, its cause, and counts the fault (flushed() waits on
 * that). The writes themselves still get the failure through their own promises (writeFault()).
 */
function handleDetachedFailures(root: RootDatabase, noteFault: () => void): void {
  const ignore = () => undefined;
  const handle = () => {
    void root.committed.then(ignore, (err: unknown) => {
      noteFault();
      const cause = (err as { commitError?: unknown } | null)?.commitError;
      if (cause instanceof Promise) cause.catch(ignore);
    });
  };
  root.on('beforecommit', () => queueMicrotask(handle));
}

/** An lmdb-js commit failure: its error carries a `commitError` promise that holds the cause. */
function isCommitFailure(err: unknown): boolean {
  return (err as { commitError?: unknown } | null)?.commitError instanceof Promise;
}

/**
 * lmdb-js rejects a failed commit's writes with an error whose `commitError` promise is rejected
 * with the cause once the write thread reports it: in the same turn, or a turn later when the main
 * thread saw the failed commit first. Waited for up to CAUSE_WAIT_MS; `err` itself when it never
 * comes (or is not a commit failure).
 */
const CAUSE_WAIT_MS = 1000;
async function commitCause(err: unknown): Promise<unknown> {
  if (!isCommitFailure(err)) return err;
  const pending = (err as { commitError: Promise<unknown> }).commitError;
  let timer: NodeJS.Timeout | undefined;
  const cause = pending.then(
    () => err,
    (reason: unknown) => reason,
  );
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve(err), CAUSE_WAIT_MS);
  });
  try {
    return await Promise.race([cause, late]);
  } finally {
    clearTimeout(timer);
  }
}

const NO_SPACE_CODES = new Set<unknown>([28, 122, 30, 'ENOSPC', 'EDQUOT', 'EROFS', -30792, 'MDB_MAP_FULL']);

function outOfSpace(cause: unknown): boolean {
  const code = (cause as { code?: unknown } | null)?.code;
  return (
    NO_SPACE_CODES.has(code) || /No space left|MDB_MAP_FULL|Disk quota|Read-only file system/i.test(messageOf(cause))
  );
}

/**
 * The disk answered a write with an I/O error (seen on the write after one that found the disk
 * full): LMDB applied nothing of it, and a later write may succeed.
 */
function diskFault(cause: unknown): boolean {
  const code = (cause as { code?: unknown } | null)?.code;
  return code === 'EIO' || code === 5 || /Input\/output error/i.test(messageOf(cause));
}

function messageOf(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}

export { isDomainError };
