import type pg from 'pg';
import type { Entry, WriteTable } from './kv.js';
import type { TableName } from './tables.js';
import { AFTER_ALL, decodeKey, encodeKey } from './tuple-key.js';
import type { Key, KeyPart, ScanOptions } from './types.js';

/**
 * One PostgreSQL write transaction as few round trips as it can be (kv-postgres.ts runs it).
 *
 * - Statements are sent as simple-protocol text with their values inlined as literals (escaped
 *   below, never interpolated raw), so that several of them travel in ONE message and come back in
 *   one answer: a round trip, whatever the number of statements in it.
 * - Reads made together (a `Promise.all`, or reads started before the previous round trip came
 *   back) are gathered until the event loop turns and sent as one round trip; `BEGIN` (and the
 *   mode's first statements) ride on the first of them. `getMany` reads several keys of a table in
 *   one statement.
 * - Puts and removes are buffered and sent with `COMMIT` (one round trip for all the writes and the
 *   commit), or earlier, in front of a scan of a table they touch, so the scan sees them. Either
 *   way they run in the transaction before anything read after them.
 * - Read-your-writes: every put and remove lands at once in the transaction's view (`seen`), and a
 *   read answers from it before asking the database. What the database answered is kept there
 *   too: a key read twice needs one statement. A scan without a limit also remembers its range: a
 *   key inside it that the scan did not return is absent, with no statement (the period usage's
 *   charge after its sum).
 * - A statement that fails leaves the transaction failed: `commit` rethrows that error rather than
 *   sending a COMMIT that PostgreSQL would turn into a silent rollback.
 */

/** Told of each message sent to the database and its statements (the metrics count them). */
export type PgCounts = (statements: number) => void;

/**
 * How a transaction begins and commits: its BEGIN, the statements sent right after it (row locks
 * taken before anything is read), and whether a write of a row the transaction read is checked
 * against what it read (kv-postgres.ts says when and why).
 */
export interface PgTxMode {
  begin: string;
  first: string[];
  checked: boolean;
}

interface Waiting {
  sql: string;
  /** The table a scan reads (buffered writes to it go first). */
  scans?: TableName;
  resolve(result: pg.QueryResult): void;
  reject(err: unknown): void;
}

/** A text literal whatever standard_conforming_strings says: an E'' string, \ and ' doubled. */
export function textLiteral(s: string): string {
  return `E'${s.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

/** A bytea literal in hex. */
export function byteaLiteral(b: Buffer): string {
  return `E'\\\\x${b.toString('hex')}'::bytea`;
}

const idOf = (table: TableName, k: Buffer) => `${table}\u0000${k.toString('hex')}`;

/** The range a scan reads in encoded keys: from `low` (excluded when `lowOpen`) up to `high`, excluded. */
function scanRange(prefix: KeyPart[], options: ScanOptions): { low: Buffer; high: Buffer; lowOpen: boolean } {
  const base = encodeKey(prefix);
  const high = Buffer.concat([base, Buffer.from([AFTER_ALL])]);
  if (options.startAfter !== undefined) {
    const after = encodeKey(options.startAfter);
    return Buffer.compare(after, base) >= 0 ? { low: after, high, lowOpen: true } : { low: base, high, lowOpen: false };
  }
  const at = options.after === undefined ? undefined : encodeKey([...prefix, options.after]);
  if (!options.reverse) {
    return { low: at === undefined ? base : Buffer.concat([at, Buffer.from([AFTER_ALL])]), high, lowOpen: false };
  }
  // As on LMDB, a reverse scan under a non-empty prefix leaves out the key equal to the prefix.
  return { low: base, high: at ?? high, lowOpen: prefix.length > 0 };
}

/** The SELECT of a scan, its values inlined. */
function scanSql(table: TableName, prefix: KeyPart[], options: ScanOptions): string {
  const { low, high, lowOpen } = scanRange(prefix, options);
  const where = [`tbl = ${textLiteral(table)}`, `k ${lowOpen ? '>' : '>='} ${byteaLiteral(low)}`];
  where.push(`k < ${byteaLiteral(high)}`);
  const reverse = options.startAfter === undefined && (options.reverse ?? false);
  let sql = `SELECT k, v FROM svc_kv WHERE ${where.join(' AND ')} ORDER BY k ${reverse ? 'DESC' : 'ASC'}`;
  if (options.limit !== undefined) sql += ` LIMIT ${Math.max(0, Math.floor(options.limit))}`;
  return sql;
}

export class PgTx {
  open = true;
  /** The transaction's view: JSON text, or null for a key known absent. */
  private readonly seen = new Map<string, string | null>();
  /** What the database held for each key when this transaction first read it (checked mode). */
  private readonly base = new Map<string, string | null>();
  /** Buffered writes not yet sent: value text, or null for a remove. */
  private readonly pending = new Map<string, { table: TableName; k: Buffer; v: string | null }>();
  /** Ranges read whole by scans, per table. */
  private readonly covered = new Map<TableName, Array<{ low: Buffer; high: Buffer; lowOpen: boolean }>>();
  private waiting: Waiting[] = [];
  private scheduled = false;
  private chain: Promise<void> = Promise.resolve();
  private begun = false;
  private failed: unknown = undefined;
  private readonly client: pg.PoolClient;
  private readonly mode: PgTxMode;
  private readonly counts: PgCounts;

  constructor(client: pg.PoolClient, mode: PgTxMode, counts: PgCounts) {
    this.client = client;
    this.mode = mode;
    this.counts = counts;
  }

  table<V>(name: TableName): WriteTable<V> {
    return {
      get: (key) => this.get<V>(name, key),
      getMany: (keys) => this.getMany<V>(name, keys),
      has: async (key) => (await this.get(name, key)) !== undefined,
      scan: (prefix, options) => this.scan<V>(name, prefix, options),
      put: async (key, value) => this.put(name, key, value),
      remove: async (key) => this.put(name, key, undefined),
    };
  }

  private assertOpen(): void {
    if (!this.open) throw new Error('a store transaction was used after its write function ended');
  }

  /** What the view knows of a key: its text, null (absent), or undefined (ask the database). */
  private known(table: TableName, k: Buffer): string | null | undefined {
    const v = this.seen.get(idOf(table, k));
    if (v !== undefined) return v;
    return this.inCovered(table, k) ? null : undefined;
  }

  private inCovered(table: TableName, k: Buffer): boolean {
    return (this.covered.get(table) ?? []).some(
      (r) =>
        (r.lowOpen ? Buffer.compare(k, r.low) > 0 : Buffer.compare(k, r.low) >= 0) && Buffer.compare(k, r.high) < 0,
    );
  }

  /** What the database held for a key when first read: text, null (absent), undefined (never read). */
  private wasRead(id: string, table: TableName, k: Buffer): string | null | undefined {
    if (this.base.has(id)) return this.base.get(id);
    return this.inCovered(table, k) ? null : undefined;
  }

  /** Records what the database answered, unless the view already holds a newer value (a put). */
  private learn(table: TableName, k: Buffer, v: string | null): void {
    const id = idOf(table, k);
    if (!this.base.has(id)) this.base.set(id, v);
    if (!this.seen.has(id)) this.seen.set(id, v);
  }

  async get<V>(table: TableName, key: Key): Promise<V | undefined> {
    return (await this.getMany<V>(table, [key]))[0];
  }

  async getMany<V>(table: TableName, keys: readonly Key[]): Promise<Array<V | undefined>> {
    this.assertOpen();
    const encoded = keys.map((key) => encodeKey(key));
    const unknown = encoded.filter((k) => this.known(table, k) === undefined);
    const ask = [...new Map(unknown.map((k) => [k.toString('hex'), k])).values()];
    if (ask.length > 0) {
      const where = ask.length === 1 ? `k = ${byteaLiteral(ask[0]!)}` : `k IN (${ask.map(byteaLiteral).join(', ')})`;
      const { rows } = await this.statement(`SELECT k, v FROM svc_kv WHERE tbl = ${textLiteral(table)} AND ${where}`);
      const found = new Map((rows as Array<{ k: Buffer; v: string }>).map((r) => [r.k.toString('hex'), r.v]));
      for (const k of ask) this.learn(table, k, found.get(k.toString('hex')) ?? null);
    }
    return encoded.map((k) => {
      const text = this.known(table, k);
      return text === null || text === undefined ? undefined : (JSON.parse(text) as V);
    });
  }

  async scan<V>(table: TableName, prefix: KeyPart[], options: ScanOptions = {}): Promise<Array<Entry<V>>> {
    this.assertOpen();
    const { rows } = await this.statement(scanSql(table, prefix, options), table);
    const entries = (rows as Array<{ k: Buffer; v: string }>).map((r) => {
      this.learn(table, r.k, r.v);
      return { key: decodeKey(r.k), value: JSON.parse(r.v) as V };
    });
    if (options.limit === undefined) {
      const list = this.covered.get(table) ?? [];
      list.push(scanRange(prefix, options));
      this.covered.set(table, list);
    }
    return entries;
  }

  /** A put, or a remove (`value` undefined): into the view at once, to the database later. */
  put(table: TableName, key: Key, value: unknown): void {
    this.assertOpen();
    let text: string | null = null;
    if (value !== undefined) {
      const json = JSON.stringify(value) as string | undefined;
      if (json === undefined) throw new TypeError('a store value must be JSON');
      text = json;
    }
    const k = encodeKey(key);
    const id = idOf(table, k);
    this.seen.set(id, text);
    this.pending.set(id, { table, k, v: text });
  }

  /**
   * The buffered writes as statements, emptying the buffer: in checked mode first one statement
   * for the writes of rows this transaction read, each applied only if the row still holds what
   * was read (else the statement fails as a serialization failure, and the write runs again), in
   * key order; then at most one DELETE and one upsert for the rest.
   */
  private writes(): string[] {
    const removes: string[] = [];
    const puts: string[] = [];
    const checks: Array<{ table: TableName; sql: string }> = [];
    const ordered = [...this.pending.entries()].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
    for (const [id, w] of ordered) {
      const was = this.mode.checked ? this.wasRead(id, w.table, w.k) : undefined;
      this.base.set(id, w.v);
      const tbl = textLiteral(w.table);
      const k = byteaLiteral(w.k);
      if (was === undefined) {
        if (w.v === null) removes.push(`(${tbl}, ${k})`);
        else puts.push(`(${tbl}, ${k}, ${textLiteral(w.v)})`);
      } else if (was === null && w.v !== null) {
        checks.push({
          table: w.table,
          sql: `INSERT INTO svc_kv (tbl, k, v) VALUES (${tbl}, ${k}, ${textLiteral(w.v)}) ON CONFLICT (tbl, k) DO NOTHING RETURNING 1`,
        });
      } else if (was !== null && w.v === null) {
        checks.push({
          table: w.table,
          sql: `DELETE FROM svc_kv WHERE tbl = ${tbl} AND k = ${k} AND v = ${textLiteral(was)} RETURNING 1`,
        });
      } else if (was !== null && w.v !== null) {
        checks.push({
          table: w.table,
          sql: `UPDATE svc_kv SET v = ${textLiteral(w.v)} WHERE tbl = ${tbl} AND k = ${k} AND v = ${textLiteral(was)} RETURNING 1`,
        });
      }
    }
    this.pending.clear();
    const out: string[] = [];
    if (checks.length > 0) {
      const ctes = checks.map((c, i) => `c${i} AS (${c.sql})`).join(', ');
      const changed = checks.map(
        (c, i) => `CASE WHEN (SELECT count(*) FROM c${i}) = 1 THEN NULL ELSE ${textLiteral(c.table)} END`,
      );
      out.push(`WITH ${ctes} SELECT svc_kv_check(array_remove(ARRAY[${changed.join(', ')}]::text[], NULL))`);
    }
    if (removes.length > 0) out.push(`DELETE FROM svc_kv WHERE (tbl, k) IN (${removes.join(', ')})`);
    if (puts.length > 0) {
      out.push(
        `INSERT INTO svc_kv (tbl, k, v) VALUES ${puts.join(', ')} ON CONFLICT (tbl, k) DO UPDATE SET v = EXCLUDED.v`,
      );
    }
    return out;
  }

  /** A statement, sent with the others started before the event loop turns. */
  private statement(sql: string, scans?: TableName): Promise<pg.QueryResult> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ sql, ...(scans === undefined ? {} : { scans }), resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.chain = this.chain.then(() => this.send());
      });
    });
  }

  private async send(): Promise<void> {
    const batch = this.waiting;
    this.waiting = [];
    if (batch.length === 0) return;
    if (this.failed !== undefined) {
      for (const w of batch) w.reject(this.failed);
      return;
    }
    const touched = new Set([...this.pending.values()].map((w) => w.table));
    const before = batch.some((w) => w.scans !== undefined && touched.has(w.scans)) ? this.writes() : [];
    try {
      const results = await this.roundTrip([...before, ...batch.map((w) => w.sql)]);
      const own = results.slice(results.length - batch.length);
      batch.forEach((w, i) => w.resolve(own[i]!));
    } catch (err) {
      this.failed = err;
      for (const w of batch) w.reject(err);
    }
  }

  /** One message to the database; BEGIN rides on the first. Answers each statement's result. */
  private async roundTrip(statements: string[]): Promise<pg.QueryResult[]> {
    const all = this.begun ? statements : [this.mode.begin, ...this.mode.first, ...statements];
    this.begun = true;
    this.counts(all.length);
    const answer = (await this.client.query(all.join(';\n'))) as unknown as pg.QueryResult | pg.QueryResult[];
    return Array.isArray(answer) ? answer : [answer];
  }

  /**
   * The buffered writes and COMMIT in one round trip (with BEGIN too if nothing was read). A
   * transaction that read nothing and wrote nothing sends nothing.
   */
  async commit(): Promise<void> {
    this.open = false;
    await this.chain;
    if (this.failed !== undefined) throw this.failed;
    const writes = this.writes();
    if (!this.begun && writes.length === 0) return;
    await this.roundTrip([...writes, 'COMMIT']);
  }

  /** Once no round trip is under way (before a ROLLBACK on the same connection). */
  async drained(): Promise<void> {
    this.open = false;
    await this.chain.catch(() => undefined);
  }

  /** Whether anything was sent (a ROLLBACK is then owed). */
  started(): boolean {
    return this.begun;
  }
}
