import { isoAt } from '../lib/clock.js';
import { createAppend } from './append.js';
import { checkpointAll, latestCheckpoint, type LatestCheckpoint } from './checkpoint.js';
import type { LedgerDeps, LedgerParts } from './context.js';
import { evidenceBundle, type EvidenceBundle } from './evidence.js';
import type { LedgerEvent, LedgerHead, LedgerRecord } from './records.js';
import { ledgerRepo } from './repo.js';
import { searchLedger, type LedgerPage, type LedgerSearch } from './search.js';
import type { LedgerSubscriber } from './subscribers.js';
import { verifyStored } from './verify-stored.js';
import type { LedgerVerifyReport } from './verify.js';

export type { LedgerEvent, LedgerRecord } from './records.js';
export type { LedgerDeps } from './context.js';
export type { LatestCheckpoint } from './checkpoint.js';
export type { EvidenceBundle } from './evidence.js';
export type { LedgerPage, LedgerSearch } from './search.js';
export { CHECKPOINT_EVERY_RECORDS } from './checkpoint.js';

/**
 * The ledger: an append-only transparency log per workspace (docs/gate.md#ledger).
 * Rules:
 * - `record` runs inside the caller's store.write(), so a decision and its record commit
 *   together or not at all: there is never an allow without its record. The subscribers
 *   (subscribers.ts), given once in order by the composition root, are called with each record
 *   in that same write (append.ts).
 * - The stored value is the exact RFC 8785 bytes that were hashed, with the RFC 9162 leaf hash.
 * - An append writes the record and a small head (its size); the tree's compact range is kept
 *   as of the last checkpoint, and a checkpoint extends it with the leaf hashes stored since, so
 *   neither costs more with the ledger's size. Concurrent writers (server, CLI, other instances)
 *   read the head inside their write: two appends to one ledger conflict and the store runs one
 *   of them again, so appends are serialized by the store (no head is cached in memory).
 * - A checkpoint (C2SP signed note, signed with the ledger key, never the receipt key) is written
 *   when 1,000 records have accumulated, and by `checkpointAll` (every second and on shutdown):
 *   checkpoint.ts.
 *
 * It reads and writes the `ledger`, `ledgerHeads` and `checkpoints` tables (repo.ts) and no other;
 * it reads the signing keys (src/signing/), and creates the ledger key in a write if there is none.
 */
export interface Ledger {
  /**
   * Gives the ledger its subscribers, called in this order with each record appended, inside its
   * write (subscribers.ts). Once, by the composition root, before anything is recorded: a second
   * call, or one after the first record, throws.
   */
  subscribe(ordered: readonly LedgerSubscriber[]): void;
  /**
   * Appends one record to its workspace's ledger. Only inside store.write(). `options.id` is an
   * `evr_` id taken earlier (`ids.id('evr')`), for a record queued off the hot path whose id was
   * already handed out.
   *
   * It reads the head and writes the next entry in the caller's transaction: a concurrent append
   * to the same ledger (another write, another process) conflicts and its write runs again, so
   * appends are serialized by the store, and no head is kept in memory. Within ONE write, appends
   * are queued one after another (store.currentWrite() names the write), so even a
   * `Promise.all` over `record` gives consecutive indexes. A subscriber must not append itself
   * (it would wait on its own append).
   */
  record(event: LedgerEvent, options?: { id?: string }): Promise<LedgerRecord>;
  /** Signs a checkpoint for every workspace whose ledger grew since its last one (its own write); how many. */
  checkpointAll(): Promise<number>;
  /** A page of a workspace's records in index order after `after` (exclusive); `next` is the last index given. */
  list(wid: string, options: { after?: number; limit: number }): Promise<LedgerPage>;
  /**
   * The console's read (search.ts): records matching `filter`, oldest first after `cursor`
   * (`order: 'asc'`) or newest first before it (`'desc'`). At most SCAN_LIMIT records are
   * examined; `next` is the index to resume from (the last one examined), or null at the end.
   */
  search(wid: string, options: LedgerSearch): Promise<LedgerPage>;
  /** The newest signed checkpoint, with the ledger's origin and its size now (read after it, so never smaller). */
  latestCheckpoint(wid: string): Promise<LatestCheckpoint>;
  /** A workspace ledger's head (its size, its compact range as of the last checkpoint), if it has one. */
  head(wid: string): Promise<LedgerHead | undefined>;
  /** Checks a workspace's ledger in the store (verify.ts, verify-stored.ts), and that its head agrees. */
  verify(wid: string): Promise<LedgerVerifyReport>;
  /** "Verify now" in the console: `verify` (what `svc ledger verify` runs), with when it ran. */
  verifyNow(wid: string): Promise<LedgerVerifyReport & { workspaceId: string; checkedAt: string }>;
  /**
   * The evidence bundle (`GET /v1/admin/evidence`, evidence.ts): every record from the first up to
   * the newest signed checkpoint at or before `to` (all of them without `to`), with the exact bytes
   * hashed, the checkpoints, the consistency proofs between them and the JWKS. Reads only.
   */
  bundle(wid: string, options?: { to?: string }): Promise<EvidenceBundle>;
  /** Every workspace that has a ledger. */
  workspaces(): Promise<string[]>;
}

/** The token id a record carries beside `token:<name>` (its actor), for a caller that may be a token. */
export const tokenOf = (who: { tokenId?: string | undefined }): { tokenId?: string } =>
  who.tokenId ? { tokenId: who.tokenId } : {};

export function createLedger(deps: LedgerDeps): Ledger {
  const parts: LedgerParts = { ...deps, repo: ledgerRepo(deps.store) };
  const { repo, clock } = parts;
  const { subscribe, record } = createAppend(parts);
  const verify = (wid: string) => verifyStored(parts, wid);

  return {
    subscribe,
    record,
    checkpointAll: () => checkpointAll(parts),

    async list(wid, options) {
      const rows = await repo.entries(wid, {
        ...(options.after === undefined ? {} : { after: options.after }),
        limit: options.limit + 1,
      });
      const page = rows.slice(0, options.limit).map((r) => JSON.parse(r.bytes) as LedgerRecord);
      return { data: page, next: rows.length > options.limit ? page[page.length - 1]!.index : null };
    },

    search: (wid, options) => searchLedger(parts, wid, options),
    latestCheckpoint: (wid) => latestCheckpoint(parts, wid),
    head: (wid) => repo.head(wid),
    verify,

    async verifyNow(wid) {
      return { workspaceId: wid, ...(await verify(wid)), checkedAt: isoAt(clock.now()) };
    },

    bundle: (wid, options = {}) => evidenceBundle(parts, wid, options),

    async workspaces() {
      return (await repo.heads()).map((e) => e.wid);
    },
  };
}
