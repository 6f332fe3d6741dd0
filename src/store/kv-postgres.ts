import pg from 'pg';
import { metrics } from '../lib/metrics.js';
import { StoreError } from './errors.js';
import {
  isDomainError,
  type Entry,
  type KvStore,
  type ReadTable,
  type ReadTables,
  type WriteOptions,
  type WriteTx,
} from './kv.js';
import { byteaLiteral, PgTx, textLiteral, type PgCounts, type PgTxMode } from './pg-tx.js';
import { tableNames, type TableName } from './tables.js';
import { AFTER_ALL, decodeKey, encodeKey } from './tuple-key.js';
import type { Key, KeyPart, ScanOptions } from './types.js';

/**
 * The PostgreSQL backend of the asynchronous interface, for operators past one machine
 * (`--store postgres://user:pass@host:port/db`).
 *
 * - One table, `svc_kv (tbl, k, v)`, keyed by (store table name, tuple key), rather than one SQL
 *   table per store table: the store's tables are a registry in code (tables.ts) that grows with
 *   features, and on LMDB a new table costs nothing; here too adding a table needs no DDL, and the
 *   numbered migrations (shared with LMDB) only ever move data, never the SQL schema.
 * - Keys: the order-preserving byte encoding of tuple-key.ts as `bytea`, whose order is byte order
 *   whatever the database's collation; so prefix, `after`, `limit`, `reverse` and `startAfter`
 *   scans are index range scans and answer exactly as on LMDB.
 * - Values: the JSON text, in a `text` column (not `jsonb`, which reorders object keys and rewrites
 *   numbers): what JSON.parse gives back is exactly what was put, as on LMDB.
 * - A write is one transaction on one pooled connection, in few round trips (pg-tx.ts: reads made
 *   together in one message, writes with the COMMIT): SERIALIZABLE, or, for a write that names
 *   the rows it serializes on, READ COMMITTED with those rows locked first (`scopedMode` says why
 *   that is correct). On a serialization failure
 *   (40001) or deadlock (40P01) it is rolled back and the write function runs again after a
 *   jittered backoff, at most MAX_ATTEMPTS times (then StoreError 'conflict'). The writes of one
 *   process queue, one transaction at a time (see `queue` below), so only another instance's
 *   transaction can conflict with one. COMMIT returns once
 *   the WAL is flushed (synchronous_commit on): acknowledged means durable.
 * - Reads outside a write are single autocommit statements: the latest commit, no cache.
 * - A lost or refused connection is StoreError 'unavailable' (the HTTP layer answers 503); the
 *   pool drops the broken connection and opens new ones when the database returns. Messages name
 *   the host, port and database, never the URL (it holds the password).
 */

const MAX_ATTEMPTS = 32;
const RETRY_CODES = new Set(['40001', '40P01']);

const SCHEMA = `CREATE TABLE IF NOT EXISTS svc_kv (
  tbl text COLLATE "C" NOT NULL,
  k bytea NOT NULL,
  v text NOT NULL,
  PRIMARY KEY (tbl, k)
)`;

/**
 * Fails a checked write (pg-tx.ts) whose rows changed since it read them, as a serialization
 * failure that names their tables in PostgreSQL's log.
 */
const CHECK_FUNCTION = `CREATE OR REPLACE FUNCTION svc_kv_check(changed text[]) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF cardinality(changed) > 0 THEN
    RAISE EXCEPTION 'could not serialize access: rows this write read were changed by another write (tables %)',
      array_to_string(changed, ', ') USING ERRCODE = 'serialization_failure';
  END IF;
  RETURN true;
END $$`;

const SERIALIZABLE: PgTxMode = { begin: 'BEGIN ISOLATION LEVEL SERIALIZABLE', first: [], checked: false };

/**
 * A write that names the rows it serializes on (`serializeOn`: the gate names the deciding
 * agent's record). Why this is correct, and why it never fails a write of another agent:
 * - READ COMMITTED, and the first statement, sent with BEGIN, locks the named rows FOR UPDATE: a
 *   second write naming one of them waits there until the first commits. Every later statement
 *   of the write takes a new snapshot, so what it reads after the lock includes everything the
 *   previous holder committed: the writes on one agent run strictly one after another, each
 *   seeing the one before (its usage, its idempotency keys, its holds).
 * - A write that changes a named row without naming it (a freeze setting a hold on the agent's
 *   record, under SERIALIZABLE) waits for the lock too: it cannot slip between a decision's read
 *   of the record and its commit.
 * - Every row the write read and then writes is written only if it still holds what was read
 *   (pg-tx.ts, checked mode): a writer that does not name the row (the period usage given back
 *   by a settlement, an approval's charge, another append to the same ledger) makes this write
 *   fail as a serialization failure and run again, never lose an update.
 * - Rows read and not written (the mandate, a workspace's stop-all, the signing key) are read as
 *   committed at that moment: the write is ordered before any change to them committed later,
 *   which is a serial order.
 * - No predicate locks: SERIALIZABLE locks index pages (and, past max_pred_locks_per_relation,
 *   the whole one table every store table lives in), so two decisions for agents that share
 *   nothing failed each other whenever their rows shared an index page. Here they share no row,
 *   so nothing makes one wait for or fail the other.
 */
function scopedMode(rows: ReadonlyArray<readonly [TableName, Key]>): PgTxMode {
  const first = rows.map(
    ([table, key]) =>
      `SELECT 1 FROM svc_kv WHERE tbl = ${textLiteral(table)} AND k = ${byteaLiteral(encodeKey(key))} FOR UPDATE`,
  );
  return { begin: 'BEGIN ISOLATION LEVEL READ COMMITTED', first, checked: true };
}

type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

/** Where a URL points, for messages: host, port and database, never the user or password. */
export function describePostgresUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname || 'localhost'}:${u.port || '5432'} (database ${decodeURIComponent(u.pathname.slice(1)) || 'postgres'})`;
  } catch {
    return 'an unparsable PostgreSQL URL';
  }
}

/** Connection faults: the database is down, unreachable, restarting, or the connection broke. */
function connectionFault(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  if (/^(08|57P0)/.test(code)) return true;
  if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE', 'EAI_AGAIN'].includes(code)) {
    return true;
  }
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|not queryable/i.test(
    typeof e?.message === 'string' ? e.message : '',
  );
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

function scanQuery(table: TableName, prefix: KeyPart[], options: ScanOptions): { text: string; values: unknown[] } {
  const base = encodeKey(prefix);
  const values: unknown[] = [table];
  const where = ['tbl = $1'];
  const arg = (v: unknown) => `$${values.push(v)}`;
  const high = Buffer.concat([base, Buffer.from([AFTER_ALL])]);
  let reverse = false;
  if (options.startAfter !== undefined) {
    where.push(`k > ${arg(encodeKey(options.startAfter))}`, `k >= ${arg(base)}`, `k < ${arg(high)}`);
  } else {
    reverse = options.reverse ?? false;
    const at = options.after === undefined ? undefined : encodeKey([...prefix, options.after]);
    if (!reverse) {
      where.push(`k >= ${arg(at === undefined ? base : Buffer.concat([at, Buffer.from([AFTER_ALL])]))}`);
      where.push(`k < ${arg(high)}`);
    } else {
      // As on LMDB, a reverse scan under a non-empty prefix leaves out the key equal to the prefix.
      where.push(prefix.length === 0 ? `k >= ${arg(base)}` : `k > ${arg(base)}`);
      where.push(`k < ${arg(at ?? high)}`);
    }
  }
  let text = `SELECT k, v FROM svc_kv WHERE ${where.join(' AND ')} ORDER BY k ${reverse ? 'DESC' : 'ASC'}`;
  if (options.limit !== undefined) text += ` LIMIT ${arg(options.limit)}`;
  return { text, values };
}

/** A table read outside a write: each read one autocommit statement on the pool. */
class PgTable<V> implements ReadTable<V> {
  private readonly name: TableName;
  private readonly db: () => Queryable;

  constructor(name: TableName, db: () => Queryable) {
    this.name = name;
    this.db = db;
  }

  async get(key: Key): Promise<V | undefined> {
    const { rows } = await this.db().query<{ v: string }>({
      name: 'svc_kv_get',
      text: 'SELECT v FROM svc_kv WHERE tbl = $1 AND k = $2',
      values: [this.name, encodeKey(key)],
    });
    return rows[0] === undefined ? undefined : (JSON.parse(rows[0].v) as V);
  }

  async getMany(keys: readonly Key[]): Promise<Array<V | undefined>> {
    const encoded = keys.map((key) => encodeKey(key));
    const { rows } = await this.db().query<{ k: Buffer; v: string }>({
      name: 'svc_kv_get_many',
      text: 'SELECT k, v FROM svc_kv WHERE tbl = $1 AND k = ANY($2::bytea[])',
      values: [this.name, encoded],
    });
    const found = new Map(rows.map((r) => [r.k.toString('hex'), r.v]));
    return encoded.map((k) => {
      const v = found.get(k.toString('hex'));
      return v === undefined ? undefined : (JSON.parse(v) as V);
    });
  }

  async has(key: Key): Promise<boolean> {
    return (await this.get(key)) !== undefined;
  }

  async scan(prefix: KeyPart[], options: ScanOptions = {}): Promise<Array<Entry<V>>> {
    const { rows } = await this.db().query<{ k: Buffer; v: string }>(scanQuery(this.name, prefix, options));
    return rows.map((row) => ({ key: decodeKey(row.k), value: JSON.parse(row.v) as V }));
  }
}

function tablesOn(db: () => Queryable): Record<TableName, PgTable<unknown>> {
  return Object.fromEntries(tableNames.map((name) => [name, new PgTable(name, db)])) as Record<
    TableName,
    PgTable<unknown>
  >;
}

export interface PostgresOptions {
  /** Connections in the pool (default 10). */
  max?: number;
  /** How long getting a connection may take before the database counts as unreachable (default 10 s). */
  connectTimeoutMs?: number;
}

export async function openKvPostgresStore(url: string, options: PostgresOptions = {}): Promise<KvStore> {
  const where = describePostgresUrl(url);
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    // Also how long a write may wait for a free pooled connection under load.
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
  });
  // An idle connection that breaks (the database restarted) is dropped by the pool; without a
  // listener its 'error' event would end the process.
  pool.on('error', () => undefined);
  try {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      // Several processes may open a new database at once: one creates the table at a time.
      await client.query('SELECT pg_advisory_xact_lock(7170291)');
      await client.query(SCHEMA);
      await client.query(CHECK_FUNCTION);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw new StoreError(
      'cannot_open',
      `cannot open the PostgreSQL store at ${where}: ${messageOf(err)}. Check that PostgreSQL runs there and accepts this user, and the URL given to --store or SVC_STORE_URL`,
    );
  }

  let writable = true;
  const counts: PgCounts = (statements) => {
    metrics.storeRoundTrips.inc();
    metrics.storeStatements.inc(statements);
  };
  const tables = tablesOn(() => pool);

  const fault = (err: unknown): StoreError => {
    if (connectionFault(err)) {
      writable = false;
      return new StoreError('unavailable', `the PostgreSQL store at ${where} is unavailable: ${messageOf(err)}`);
    }
    const code = (err as { code?: unknown } | null)?.code;
    if (code === '53100' || code === '53200') {
      writable = false;
      return new StoreError('no_space', `store write failed at ${where}: ${messageOf(err)}`);
    }
    return new StoreError('write_failed', `store write failed at ${where}: ${messageOf(err)}`);
  };

  /** Reads outside a write: a connection fault becomes 'unavailable', other errors pass. */
  const readTables = Object.fromEntries(
    tableNames.map((name) => {
      const t = tables[name];
      const guard =
        <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
        async (...a: A): Promise<R> => {
          try {
            return await f(...a);
          } catch (err) {
            throw err instanceof StoreError ? err : fault(err);
          }
        };
      const read: ReadTable<unknown> = {
        get: guard((key: Key) => t.get(key)),
        getMany: guard((keys: readonly Key[]) => t.getMany(keys)),
        has: guard((key: Key) => t.has(key)),
        scan: guard((prefix: KeyPart[], o?: ScanOptions) => t.scan(prefix, o)),
      };
      return [name, read];
    }),
  ) as unknown as ReadTables;

  /**
   * One run of `fn` in a SERIALIZABLE transaction on one pooled connection (pg-tx.ts: its reads
   * gathered into few round trips, its writes sent with the COMMIT); `ok: false` after a
   * serialization failure or deadlock (rolled back, to be run again).
   */
  async function attempt<T>(
    fn: (tx: WriteTx) => Promise<T>,
    mode: PgTxMode,
  ): Promise<{ ok: true; result: T } | { ok: false }> {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (err) {
      throw fault(err);
    }
    let broken: Error | undefined;
    // A connection that breaks while checked out emits 'error' (unhandled, it would end the
    // process); its next query then fails, and that failure is the write's StoreError.
    const onError = (err: Error) => {
      broken = err;
    };
    client.on('error', onError);
    const run = new PgTx(client, mode, counts);
    const tx = Object.fromEntries(tableNames.map((name) => [name, run.table(name)])) as unknown as WriteTx;
    try {
      const result = await fn(tx);
      await run.commit();
      writable = true;
      return { ok: true, result };
    } catch (err) {
      await run.drained();
      if (connectionFault(err)) {
        broken = err as Error;
        throw fault(err);
      }
      if (run.started()) {
        await client.query('ROLLBACK').catch((e: unknown) => {
          broken = e as Error;
        });
      }
      const code = (err as { code?: unknown } | null)?.code;
      if (typeof code === 'string' && RETRY_CODES.has(code) && !broken) {
        metrics.storeRetries.inc({ code });
        return { ok: false };
      }
      if (isDomainError(err) || err instanceof StoreError) throw err;
      // A database error from a statement (a bug or a constraint) is a store fault; any other
      // error thrown by the write function itself passes through unchanged.
      if (err instanceof pg.DatabaseError) throw fault(err);
      throw err;
    } finally {
      // A broken connection is destroyed rather than returned to the pool.
      client.off('error', onError);
      client.release(broken);
    }
  }

  // Write functions of this process run one at a time (a queue), each transaction committed
  // before the next begins: every decision appends to its workspace's ledger head, so concurrent
  // transactions of one process would all touch that row and fail each other at commit, burning
  // a round of queries each. Queued, only another instance's transaction can conflict; the one
  // that does retries at once, at its turn, after a jittered backoff.
  let queue: Promise<unknown> = Promise.resolve();

  async function run<T>(fn: (tx: WriteTx) => Promise<T>, mode: PgTxMode): Promise<T> {
    for (let n = 1; n <= MAX_ATTEMPTS; n++) {
      // Jittered exponential backoff (1, 2, 4 … ms, capped at 50 ms, times a random factor):
      // another instance's writers, retrying too, do not meet these again in step.
      if (n > 1) await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, 2 ** n)));
      const outcome = await attempt(fn, mode);
      if (outcome.ok) return outcome.result;
    }
    throw new StoreError('conflict', `store write conflicted with concurrent writers ${MAX_ATTEMPTS} times`);
  }

  return {
    backend: 'postgres',
    tables: readTables,
    async write<T>(fn: (tx: WriteTx) => Promise<T>, options?: WriteOptions): Promise<T> {
      const rows = options?.serializeOn ?? [];
      const mode = rows.length === 0 ? SERIALIZABLE : scopedMode(rows);
      const turn = queue.then(() => run(fn, mode));
      queue = turn.catch(() => undefined);
      return turn;
    },
    writable: () => writable,
    async schemaVersion() {
      const version = await readTables.meta.get('schemaVersion');
      return typeof version === 'number' ? version : 0;
    },
    async backup() {
      throw new StoreError(
        'unsupported',
        `svc backup copies the LMDB file; the store is in PostgreSQL at ${where}: back it up with pg_dump (or your database's own backups)`,
      );
    },
    async close() {
      await pool.end();
    },
  };
}
