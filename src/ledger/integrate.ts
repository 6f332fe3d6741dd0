import { canonicalJson } from '../lib/canonical-json.js';
import { CHECKPOINT_EVERY_RECORDS, checkpointInWrite } from './checkpoint.js';
import { emptyHead, type LedgerParts } from './context.js';
import { leafHash } from './merkle.js';
import type { AppendedRecord, LedgerRecord } from './records.js';

/**
 * Integration: waiting records (append.ts) become the ledger's next entries.
 * Rules:
 * - One batch is ONE store write: it reads the head and the oldest waiting entries, writes each as
 *   the integrated entry at the next index (the appended record's bytes with its `index`, hashed
 *   again), removes it from the waiting ones, signs a checkpoint over the new size and writes the
 *   head. A crash mid-batch leaves nothing of it; a batch run again (a conflict) reads again. So
 *   an entry is integrated once, indices stay dense, and two integrators at once (a lease that
 *   just moved) only make one of them run again.
 * - The batch takes at most as many entries as were waiting when it was read outside the write,
 *   so appends committed meanwhile (which sort after them) do not send it round again.
 * - Which process integrates is the holder of the lease (lease.ts); anyone may integrate now
 *   (`integrateNow`: the tests, the CLI, shutdown): the write is what keeps it right.
 */

/** At most this many records per integration write. */
export const INTEGRATE_BATCH = CHECKPOINT_EVERY_RECORDS;

/** Integrates one batch of a workspace's waiting records; how many (0 when none waited). */
export async function integrateBatch(parts: LedgerParts, wid: string): Promise<number> {
  const { repo, store, clock } = parts;
  const seen = (await repo.waiting(wid, { limit: INTEGRATE_BATCH })).length;
  if (seen === 0) return 0;
  const appendedAt = await store.write(async () => {
    const waiting = await repo.waiting(wid, { limit: seen });
    if (waiting.length === 0) return [];
    const head = { ...((await repo.head(wid)) ?? emptyHead()) };
    for (const { key, entry } of waiting) {
      const record: LedgerRecord = { ...(JSON.parse(entry.bytes) as AppendedRecord), index: head.size };
      const bytes = canonicalJson(record);
      await repo.putEntry(wid, head.size, { bytes, leaf: leafHash(bytes).toString('base64url') });
      await repo.removeWaiting(key);
      head.size += 1;
    }
    await checkpointInWrite(parts, wid, head);
    await repo.putHead(wid, head);
    return waiting.map((w) => w.key[1]);
  });
  const now = clock.now();
  // Loaded here, not at the top: the CLI opens the ledger without the metrics' library.
  const { metrics } = await import('../lib/metrics.js');
  for (const at of appendedAt) metrics.ledgerIntegrationLag.observe(Math.max(0, now - at) / 1000);
  metrics.ledgerIntegrated.inc(appendedAt.length);
  return appendedAt.length;
}

/** Integrates every waiting record of one workspace, batch after batch; how many. */
export async function integrateWorkspace(parts: LedgerParts, wid: string): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await integrateBatch(parts, wid);
    total += n;
    if (n < INTEGRATE_BATCH) return total;
  }
}

/** Integrates every waiting record of every workspace; how many. */
export async function integrateAll(parts: LedgerParts): Promise<number> {
  let total = 0;
  for (const [wid] of await parts.repo.waitingWorkspaces()) total += await integrateWorkspace(parts, wid);
  return total;
}

/**
 * Integrates every waiting record (signing a checkpoint per batch), then signs a checkpoint for
 * every workspace whose head is still ahead of its last one, in one write; how many workspaces
 * got a new checkpoint.
 */
export async function checkpointAll(parts: LedgerParts): Promise<number> {
  const { repo, store } = parts;
  let integrated = 0;
  for (const [wid] of await repo.waitingWorkspaces()) if ((await integrateWorkspace(parts, wid)) > 0) integrated += 1;
  const stale = (await repo.heads()).filter((e) => e.head.size > e.head.checkpointSize);
  if (stale.length === 0) return integrated;
  return store.write(async () => {
    let n = integrated;
    for (const { wid } of stale) {
      const head = await repo.head(wid);
      if (!head || head.size <= head.checkpointSize) continue;
      const next = { ...head };
      await checkpointInWrite(parts, wid, next);
      await repo.putHead(wid, next);
      n += 1;
    }
    return n;
  });
}
