import { openKvLmdbStore } from '../../src/store/kv-lmdb.js';
import { openStore } from '../../src/store/open.js';
import { removeDir, tempDir } from '../helpers/process.js';

/**
 * The write and read paths of the LMDB backend (kv-lmdb.ts) used directly, against the store the
 * domains use (open.ts: the same backend, the transaction ambient through AsyncLocalStorage), in
 * one process, one run: 10,000 small write transactions from 50
 * concurrent writers (each reads one key and writes two, like authorizing an action), then 100,000
 * reads of existing keys, in interleaved rounds. `node --import=tsx test/bench/store-kv.ts`
 */

const WRITES = 10_000;
const WRITERS = 50;
const READS = 100_000;
const record = (i: number) => ({ id: `act_${i}`, status: 'allowed', amount: i, at: '2026-11-24T05:00:00.000Z' });

async function lanes(n: number, each: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (next < n) await each(next++);
    }),
  );
  return performance.now() - start;
}

function report(name: string, ms: number, n: number): void {
  console.log(
    `${name.padEnd(34)} ${String(Math.round((n / ms) * 1000)).padStart(8)} /s  (${n} in ${Math.round(ms)} ms)`,
  );
}

const ambientDir = await tempDir('svc-bench-ambient-');
const kvDir = await tempDir('svc-bench-kv-');
try {
  const ambient = await openStore(ambientDir);
  const kv = openKvLmdbStore(kvDir);

  // Interleaved rounds, the median of each reported: the machine is shared, and one round of
  // either can land on a busy moment.
  const ROUNDS = 5;
  const times: Record<string, number[]> = { ambientWrite: [], kvWrite: [], ambientRead: [], kvRead: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const base = r * WRITES;
    times.ambientWrite!.push(
      await lanes(WRITES, (i) =>
        ambient.write(async () => {
          await ambient.tables.idempotency.get(['wid_1', 'agt_1', `k${base + i}`]);
          await ambient.tables.actions.put(['wid_1', `act_${base + i}`], record(i) as never);
          await ambient.tables.periodUsage.put(['wid_1', 'agt_1', `u${i % 100}`, 'USD', '2026-11-24'], i);
        }),
      ),
    );
    times.kvWrite!.push(
      await lanes(WRITES, (i) =>
        kv.write(async (tx) => {
          await tx.idempotency.get(['wid_1', 'agt_1', `k${base + i}`]);
          await tx.actions.put(['wid_1', `act_${base + i}`], record(i) as never);
          await tx.periodUsage.put(['wid_1', 'agt_1', `u${i % 100}`, 'USD', '2026-11-24'], i);
        }),
      ),
    );
    let start = performance.now();
    for (let i = 0; i < READS; i++) await ambient.tables.actions.get(['wid_1', `act_${i % WRITES}`]);
    times.ambientRead!.push(performance.now() - start);
    start = performance.now();
    for (let i = 0; i < READS; i++) await kv.tables.actions.get(['wid_1', `act_${i % WRITES}`]);
    times.kvRead!.push(performance.now() - start);
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  console.log(`median of ${ROUNDS} interleaved rounds; ${WRITERS} concurrent writers`);
  report('write (ambient store)', median(times.ambientWrite!), WRITES);
  report('write (kv-lmdb directly)', median(times.kvWrite!), WRITES);
  report('read (ambient store)', median(times.ambientRead!), READS);
  report('read (kv-lmdb directly)', median(times.kvRead!), READS);

  await ambient.close();
  await kv.close();
} finally {
  await removeDir(ambientDir);
  await removeDir(kvDir);
}
