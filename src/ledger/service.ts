import { isoAt } from '../lib/clock.js';
import { createAppend } from './append.js';
import { latestCheckpoint, type LatestCheckpoint } from './checkpoint.js';
import type { LedgerDeps, LedgerParts } from './context.js';
import { evidenceBundle, type EvidenceBundle } from './evidence.js';
import { checkpointAll, integrateAll, integrateWorkspace } from './integrate.js';
import { currentLease, holdLease, leaseTtlMs } from './lease.js';
import type { AppendedRecord, LedgerEvent, LedgerHead, LedgerLease, LedgerRecord } from './records.js';
import { ledgerRepo } from './repo.js';
import { searchLedger, type LedgerPage, type LedgerSearch } from './search.js';
import type { LedgerSubscriber } from './subscribers.js';
import { verifyStored } from './verify-stored.js';
import type { LedgerVerifyReport } from './verify.js';

export type { AppendedRecord, LedgerEvent, LedgerLease, LedgerRecord } from './records.js';
export type { LedgerDeps } from './context.js';
export type { LatestCheckpoint } from './checkpoint.js';
export type { EvidenceBundle } from './evidence.js';
export type { LedgerPage, LedgerSearch } from './search.js';
export { CHECKPOINT_EVERY_RECORDS } from './checkpoint.js';
export { leaseTtlMs } from './lease.js';

/**
 * The ledger: an append-only transparency log per workspace (docs/gate.md#ledger), in two stages.
 * Rules:
 * - Append (append.ts): `record` runs inside the caller's store.write() and writes the record as
 *   a WAITING entry under a key no other record shares ([wid, appendedAtMs, seq, id]): the exact
 *   RFC 8785 bytes of the record (its id, time and event; no index yet) with their RFC 9162 leaf
 *   hash. A decision and its record commit together or not at all (never an allow without its
 *   record; acknowledged means durable), its evidence id is known at once, and two decisions
 *   never meet over the ledger: an append reads nothing of it. The subscribers (subscribers.ts),
 *   given once in order by the composition root, are called with each record in that same write.
 * - Integrate (integrate.ts): the holder of the integrator lease (lease.ts; one row in the store,
 *   renewed each round, taken by another process once it expires) takes each workspace's waiting
 *   entries in key order and, in ONE write per batch, writes them as the entries at the next
 *   indices (the same record with its `index`, hashed again), removes them from the waiting ones,
 *   signs a checkpoint (C2SP signed note, the ledger key, never the receipt key) over the new size
 *   and writes the head; at least every `ledger.integrateEveryMs` while entries wait.
 * - Why the order of integration is a valid order of the log. Each entry is durable and hashed
 *   before it is integrated, so integration adds nothing a decision relied on: nothing reads a
 *   record's index before it is integrated (a decision and its subscribers get the record's id,
 *   which the evidence names; the index, inclusion proofs and checkpoints come after). The log's
 *   order is the integrator's order, which follows the waiting keys, and those follow the order
 *   the appends were made (a process's own in sequence; across processes by the time taken in
 *   the write): an entry integrated is never moved, and an entry that commits after a batch was
 *   read goes into a later batch, so every entry gets exactly one index, indices stay dense, and
 *   every record integrated before a checkpoint is under it. A batch is one write: a crash
 *   mid-batch leaves no entry integrated twice and no gap; two integrators at once (a lease that
 *   just moved) conflict in the store and one of them runs again on what is left.
 * - A record's index and inclusion proof exist once it is integrated; before, readers see it as
 *   waiting (`integrated: false`): the evidence bundle and `verify` list waiting entries and
 *   check them against their hashes. The console's list and search, which page by index,
 *   integrate what waits for that workspace first (`integrateNow`), so a person reads the
 *   decisions they just saw made.
 * - The head keeps the tree's compact range as of the last checkpoint, so neither integration nor
 *   a checkpoint costs more with the ledger's size.
 *
 * It reads and writes the `ledger`, `ledgerHeads`, `ledgerWaiting`, `ledgerLeases` and
 * `checkpoints` tables (repo.ts) and no other; it reads the signing keys (src/signing/), and
 * creates the ledger key in a write if there is none.
 */
export interface Ledger {
  /**
   * Gives the ledger its subscribers, called in this order with each record appended, inside its
   * write (subscribers.ts). Once, by the composition root, before anything is recorded: a second
   * call, or one after the first record, throws.
   */
  subscribe(ordered: readonly LedgerSubscriber[]): void;
  /**
   * Appends one record to its workspace's ledger, waiting to be integrated (no index yet). Only
   * inside store.write(). `options.id` is an `evr_` id taken earlier (`ids.id('evr')`), for a
   * record queued off the hot path whose id was already handed out.
   *
   * It writes one waiting entry under its own key in the caller's transaction and reads nothing
   * of the ledger, so appends never conflict with each other. Appends of one process (of one
   * write included, even a `Promise.all` over `record`) are integrated in the order they were made.
   */
  record(event: LedgerEvent, options?: { id?: string }): Promise<AppendedRecord>;
  /**
   * Integrates every waiting record now, whoever holds the lease (each batch one write), and signs
   * a checkpoint for any ledger still ahead of its last one; how many workspaces got a checkpoint.
   * Shutdown and the tests call it (the CLI never integrates: the first checkpoint fixes the origin).
   */
  checkpointAll(): Promise<number>;
  /** Integrates now what waits: of one workspace, or of all; how many records. */
  integrateNow(wid?: string): Promise<number>;
  /**
   * One round of the integrator for `holder`, which runs it every `everyMs`: takes or renews the
   * lease (lease.ts) and, while it holds it, integrates every waiting record.
   */
  integrate(holder: string, everyMs: number): Promise<{ held: boolean; integrated: number }>;
  /** The integrator's lease as stored (undefined before any process took it). */
  lease(): Promise<LedgerLease | undefined>;
  /**
   * A page of a workspace's records in index order after `after` (exclusive); `next` is the last
   * index given. What waits for the workspace is integrated first.
   */
  list(wid: string, options: { after?: number; limit: number }): Promise<LedgerPage>;
  /**
   * The console's read (search.ts): records matching `filter`, oldest first after `cursor`
   * (`order: 'asc'`) or newest first before it (`'desc'`). At most SCAN_LIMIT records are
   * examined; `next` is the index to resume from (the last one examined), or null at the end.
   * What waits for the workspace is integrated first.
   */
  search(wid: string, options: LedgerSearch): Promise<LedgerPage>;
  /** The newest signed checkpoint, with the ledger's origin and its size now (read after it, so never smaller). */
  latestCheckpoint(wid: string): Promise<LatestCheckpoint>;
  /** A workspace ledger's head (its size, its compact range as of the last checkpoint), if it has one. */
  head(wid: string): Promise<LedgerHead | undefined>;
  /**
   * Checks a workspace's ledger in the store (verify.ts, verify-stored.ts), and that its head
   * agrees; waiting records are checked against their hashes and counted (`waiting`).
   */
  verify(wid: string): Promise<LedgerVerifyReport>;
  /** "Verify now" in the console: `verify` (what `svc ledger verify` runs), with when it ran. */
  verifyNow(wid: string): Promise<LedgerVerifyReport & { workspaceId: string; checkedAt: string }>;
  /**
   * The evidence bundle (`GET /v1/admin/evidence`, evidence.ts): every record from the first up to
   * the newest signed checkpoint at or before `to` (all of them without `to`), with the exact bytes
   * hashed, the checkpoints, the consistency proofs between them and the JWKS; and the records
   * still waiting (`waiting`, `integrated: false`, no index). Reads only.
   */
  bundle(wid: string, options?: { to?: string }): Promise<EvidenceBundle>;
  /** Every workspace that has a ledger: integrated records, or records waiting. */
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
    integrateNow: (wid) => (wid === undefined ? integrateAll(parts) : integrateWorkspace(parts, wid)),

    async integrate(holder, everyMs) {
      if (!(await holdLease(parts, holder, leaseTtlMs(everyMs)))) return { held: false, integrated: 0 };
      return { held: true, integrated: await integrateAll(parts) };
    },

    lease: () => currentLease(parts),

    async list(wid, options) {
      await integrateWorkspace(parts, wid);
      const rows = await repo.entries(wid, {
        ...(options.after === undefined ? {} : { after: options.after }),
        limit: options.limit + 1,
      });
      const page = rows.slice(0, options.limit).map((r) => JSON.parse(r.bytes) as LedgerRecord);
      return { data: page, next: rows.length > options.limit ? page[page.length - 1]!.index : null };
    },

    async search(wid, options) {
      await integrateWorkspace(parts, wid);
      return searchLedger(parts, wid, options);
    },
    latestCheckpoint: (wid) => latestCheckpoint(parts, wid),
    head: (wid) => repo.head(wid),
    verify,

    async verifyNow(wid) {
      return { workspaceId: wid, ...(await verify(wid)), checkedAt: isoAt(clock.now()) };
    },

    bundle: (wid, options = {}) => evidenceBundle(parts, wid, options),

    async workspaces() {
      const [heads, waiting] = await Promise.all([repo.heads(), repo.waitingWorkspaces()]);
      return [...new Set([...heads.map((e) => e.wid), ...waiting.map(([wid]) => wid)])].sort();
    },
  };
}
