import { existsSync, readdirSync, readFileSync, rmSync, statfsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { open, type RootDatabase } from 'lmdb';
import { StoreError } from './errors.js';
import type { WindowCounters } from './counters.js';
import { roomToWrite } from './kv-lmdb.js';

/**
 * The LMDB counters (counters.ts): an LMDB file of their own in the data dir, opened by every
 * process of the store (the workers of `svc serve --workers N`) on its first count.
 *
 * - Not flushed: `noSync` commits write the pages without fsync, so a count costs one small write
 *   inside the counters' own write lock (never the store's, whose commits stay flushed and
 *   batched). A process killed loses nothing: its pages are the kernel's.
 * - One file per boot of the machine, `counters-<boot id>.mdb`: after a machine crash the pages
 *   that were never flushed may be torn, and LMDB trusts its file, so the file of an earlier boot
 *   is never opened again (it is removed); the counts of the window under way are lost, which
 *   can only give keys a fresh window early. Every process of one boot finds the same name.
 * - A full disk (below the store's reserve, kv-lmdb.ts) refuses a count with StoreError
 *   'no_space' (503) before LMDB writes a page: lmdb-js cannot be trusted with a refused page write.
 */

const PREFIX = 'counters-';
const SUFFIX = '.mdb';
/** At most this many ended windows are removed by one sweep (it runs inside a count's write lock). */
const SWEEP_BATCH = 500;
const SWEEP_EVERY_MS = 1000;
const ROOM_EVERY_MS = 1000;

/** The machine's boot: Linux's boot id; elsewhere one name for every boot (then the file is kept). */
function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8')
      .trim()
      .replace(/[^0-9a-f]/gi, '');
  } catch {
    return 'boot';
  }
}

/** Removes the counters' files of earlier boots (no process of this boot opens them). */
function removeEarlierBoots(dir: string, current: string): void {
  for (const name of readdirSync(dir)) {
    if (!name.startsWith(PREFIX) || name.startsWith(current)) continue;
    if (!name.endsWith(SUFFIX) && !name.endsWith(`${SUFFIX}-lock`)) continue;
    rmSync(join(dir, name), { force: true });
  }
}

const unavailable = (err: unknown) =>
  err instanceof StoreError
    ? err
    : new StoreError(
        'unavailable',
        `the rate-limit counters cannot count: ${err instanceof Error ? err.message : String(err)}`,
        {
          cause: err,
        },
      );

export function openLmdbCounters(dataDir: string): WindowCounters {
  const dir = resolve(dataDir);
  let db: RootDatabase<number, [number, string, string]> | undefined;
  let lastSweep = 0;
  let room = { at: 0, ok: true };

  const opened = (): RootDatabase<number, [number, string, string]> => {
    if (db) return db;
    const name = `${PREFIX}${bootId()}`;
    const file = join(dir, `${name}${SUFFIX}`);
    if (!existsSync(file)) {
      // Making the file maps its first pages: on a full disk that write would be a SIGBUS.
      const fs = statfsSync(dir);
      if (fs.bavail * fs.bsize < 1024 * 1024)
        throw new StoreError('no_space', `no space left for the rate-limit counters in ${dir}`);
      removeEarlierBoots(dir, name);
    }
    db = open<number, [number, string, string]>({
      path: file,
      noSync: true,
      noMetaSync: true,
      cache: false,
      compression: false,
    });
    return db;
  };

  /** Ended windows (their end at or before `now`), a batch at a time, inside the count's write lock. */
  const sweep = (d: RootDatabase<number, [number, string, string]>, now: number) => {
    let n = 0;
    for (const key of d.getKeys({ end: [now + 1] })) {
      d.removeSync(key);
      if (++n >= SWEEP_BATCH) break;
    }
  };

  return {
    async hit(scope, key, { end: windowEnd, now }, limit) {
      const wall = Date.now();
      const count = (d: RootDatabase<number, [number, string, string]>) => {
        const k: [number, string, string] = [windowEnd, scope, key];
        return d.transactionSync(() => {
          if (wall - lastSweep > SWEEP_EVERY_MS) {
            lastSweep = wall;
            sweep(d, now);
          }
          const n = d.get(k) ?? 0;
          if (n >= limit) return { allowed: false, count: n };
          d.putSync(k, n + 1);
          return { allowed: true, count: n + 1 };
        });
      };
      try {
        if (wall - room.at > ROOM_EVERY_MS) room = { at: wall, ok: roomToWrite(dir) };
        if (!room.ok) throw new StoreError('no_space', `no space left for the rate-limit counters in ${dir}`);
        const d = opened();
        try {
          return count(d);
        } catch (err) {
          // A worker killed while it counted can leave this process's view of the file stale
          // (LMDB answers MDB_PROBLEM from then on): the file is opened afresh and the count made
          // once more; what still fails is refused like any count that cannot be made.
          if (err instanceof StoreError) throw err;
          db = undefined;
          await d.close().catch(() => undefined);
          return count(opened());
        }
      } catch (err) {
        throw unavailable(err);
      }
    },
    async close() {
      await db?.close();
      db = undefined;
    },
  };
}
