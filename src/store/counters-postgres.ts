import pg from 'pg';
import { StoreError } from './errors.js';
import type { WindowCounters } from './counters.js';
import { describePostgresUrl } from './kv-postgres.js';
import { encodeKey } from './tuple-key.js';

/**
 * The PostgreSQL counters (counters.ts): rows of the store's `rateCounters` table (tables.ts) in
 * its one table, `svc_kv`, each count ONE statement in its own autocommit transaction, never
 * inside a write of the store's (which it would make conflict):
 *
 *   INSERT … VALUES (1) ON CONFLICT DO UPDATE SET v = v + 1 WHERE v < limit RETURNING v
 *
 * adds one only below the limit, atomically across instances (the row's lock orders concurrent
 * counts), and returns the count; no row back means the limit was reached. The counters' own
 * small pool sets `synchronous_commit = off`: a count does not wait for the WAL flush, and a
 * database crash may lose the last counts of the window under way. Ended windows are removed
 * by a sweep (a bounded DELETE, at most once a second per process, not awaited by the count).
 * A count the database does not answer is StoreError 'unavailable' (503): the limit fails closed.
 */

const TABLE = 'rateCounters';
const SWEEP_BATCH = 500;
const SWEEP_EVERY_MS = 1000;

export function openPostgresCounters(url: string): WindowCounters {
  const where = describePostgresUrl(url);
  const pool = new pg.Pool({
    connectionString: url,
    max: 4,
    connectionTimeoutMillis: 5000,
    options: '-c synchronous_commit=off',
  });
  // A broken idle connection is dropped by the pool; without a listener it would end the process.
  pool.on('error', () => undefined);
  let lastSweep = 0;

  const sweep = (now: number) => {
    pool
      .query({
        name: 'svc_counters_sweep',
        text: `DELETE FROM svc_kv WHERE tbl = $1 AND k IN (SELECT k FROM svc_kv WHERE tbl = $1 AND k < $2 LIMIT ${SWEEP_BATCH})`,
        values: [TABLE, encodeKey([now + 1])],
      })
      .catch(() => undefined);
  };

  return {
    async hit(scope, key, { end, now }, limit) {
      if (limit <= 0) return { allowed: false, count: 0 };
      const wall = Date.now();
      if (wall - lastSweep > SWEEP_EVERY_MS) {
        lastSweep = wall;
        sweep(now);
      }
      try {
        const { rows } = await pool.query<{ v: string }>({
          name: 'svc_counters_hit',
          text:
            "INSERT INTO svc_kv (tbl, k, v) VALUES ($1, $2, '1') ON CONFLICT (tbl, k) DO UPDATE " +
            'SET v = (svc_kv.v::bigint + 1)::text WHERE svc_kv.v::bigint < $3 RETURNING v',
          values: [TABLE, encodeKey([end, scope, key]), limit],
        });
        return rows[0] === undefined ? { allowed: false, count: limit } : { allowed: true, count: Number(rows[0].v) };
      } catch (err) {
        throw new StoreError(
          'unavailable',
          `the rate-limit counters at ${where} cannot count: ${err instanceof Error ? err.message : String(err)}`,
          { cause: err },
        );
      }
    },
    async close() {
      await pool.end();
    },
  };
}
