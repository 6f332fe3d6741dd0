import { canonicalJson } from '../lib/canonical-json.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import type { SigningKeys } from '../signing/service.js';
import type { Store } from '../store/index.js';
import { appendLeafHashToFrontier, consistencyProof, leafHash, rootFromFrontier, rootOf } from './merkle.js';
import { checkpointBody, signNote } from './note.js';
import { verifyLedger, type LedgerVerifyReport } from './verify.js';
import type { LedgerEvent, LedgerHead, LedgerRecord } from './records.js';
import type { LedgerSubscriber } from './subscribers.js';
import { matches, SCAN_LIMIT, type LedgerFilter } from './search.js';
import { ledgerRepo } from './repo.js';

export type { LedgerEvent, LedgerRecord } from './records.js';

/**
 * The ledger: an append-only transparency log per workspace (docs/gate.md#ledger).
 * Rules:
 * - `record` runs inside the caller's store.write(), so a decision and its record commit
 *   together or not at all: there is never an allow without its record. The subscribers
 *   (subscribers.ts), given once in order by the composition root, are called with each record
 *   in that same write.
 * - The stored value is the exact RFC 8785 bytes that were hashed, with the RFC 9162 leaf hash.
 * - An append writes the record and a small head (its size); the tree's compact range is kept
 *   as of the last checkpoint, and a checkpoint extends it with the leaf hashes stored since, so
 *   neither costs more with the ledger's size. Concurrent writers (server, CLI, other instances)
 *   read the head inside their write: two appends to one ledger conflict and the store runs one
 *   of them again, so appends are serialized by the store (no head is cached in memory).
 * - A checkpoint (C2SP signed note, signed with the ledger key, never the receipt key) is written
 *   when 1,000 records have accumulated, and by `checkpointAll` (every second and on shutdown).
 */
export const CHECKPOINT_EVERY_RECORDS = 1000;

/** The token id a record carries beside `token:<name>` (its actor), for a caller that may be a token. */
export const tokenOf = (who: { tokenId?: string | undefined }): { tokenId?: string } =>
  who.tokenId ? { tokenId: who.tokenId } : {};

/** The appends under way in each write (record: one at a time per write). */
const appending = new WeakMap<object, Promise<unknown>>();
const NOT_IN_WRITE = {};

export function createLedger(deps: {
  store: Store;
  clock: Clock;
  ids: IdSource;
  signingKeys: SigningKeys;
  originHost: string;
}) {
  const { store, clock, ids, signingKeys } = deps;
  const repo = ledgerRepo(store);
  // The origin is fixed by the first checkpoint, which the server signs with its own public
  // address: a record written first by the CLI (which may not know that address) cannot set it.
  const emptyHead = (): LedgerHead => ({ size: 0, checkpointSize: 0, checkpointFrontier: [], origin: '' });
  const originOf = (wid: string, head: LedgerHead) => head.origin || `${deps.originHost}/${wid}`;

  /**
   * Signs a checkpoint over the whole ledger and moves the head's compact range up to it. Inside
   * store.write(). The signature is made in the write: Ed25519 is deterministic, so a write run
   * again signs the same body to the same bytes, and the body is what the write read.
   */
  const checkpointInWrite = async (wid: string, head: LedgerHead): Promise<void> => {
    const { record: key, privateKey } = await signingKeys.currentInWrite('ledger');
    let frontier = head.checkpointFrontier;
    let size = head.checkpointSize;
    for (const entry of await repo.entries(wid, { after: head.checkpointSize - 1 })) {
      if (size >= head.size) break;
      frontier = appendLeafHashToFrontier(frontier, size, Buffer.from(entry.leaf, 'base64url'));
      size += 1;
    }
    if (size !== head.size)
      throw new Error(`ledger of ${wid}: the head counts ${head.size} records but ${size} are stored`);
    head.origin = originOf(wid, head);
    const body = checkpointBody({ origin: head.origin, size, rootHash: rootFromFrontier(frontier, size) });
    await repo.putCheckpoint(wid, {
      size,
      note: signNote(body, head.origin, privateKey),
      at: isoAt(clock.now()),
      kid: key.kid,
    });
    head.checkpointSize = size;
    head.checkpointFrontier = frontier;
  };

  /**
   * Checks a workspace's ledger in the store (see verify.ts), and that its head agrees. The reads
   * are not one snapshot, so they are ordered to stay consistent while others append: the head
   * and the checkpoints first, then the records (at least as many as that head counts, by then),
   * then the head again and the keys. A record count between the two heads' is appends made
   * meanwhile; any other count is a ledger whose head disagrees with its records.
   */
  const verify = async (wid: string): Promise<LedgerVerifyReport> => {
    const [first, checkpoints] = await Promise.all([repo.head(wid), repo.checkpoints(wid)]);
    const records = await repo.entries(wid);
    const [last, jwks] = await Promise.all([repo.head(wid), signingKeys.jwks()]);
    const head = first ?? emptyHead();
    const sizeAfter = (last ?? emptyHead()).size;
    const report = verifyLedger({ origin: originOf(wid, head), records, checkpoints, jwks });
    if (report.ok && (records.length < head.size || records.length > Math.max(head.size, sizeAfter))) {
      const counted = records.length < head.size ? head.size : Math.max(head.size, sizeAfter);
      return {
        ...report,
        ok: false,
        firstBadIndex: Math.min(counted, records.length),
        problem: `the ledger head counts ${counted} records but ${records.length} are stored`,
      };
    }
    if (
      report.ok &&
      head.checkpointSize > 0 &&
      !rootFromFrontier(head.checkpointFrontier, head.checkpointSize).equals(
        rootOf(records.slice(0, head.checkpointSize).map((r) => Buffer.from(r.bytes))),
      )
    ) {
      return { ...report, ok: false, problem: 'the ledger head does not match its records' };
    }
    return report;
  };

  let subscribers: readonly LedgerSubscriber[] | null = null;
  // Subscribers given after a record was appended would have missed it: refused.
  let appended = false;

  return {
    /**
     * Gives the ledger its subscribers, called in this order with each record appended, inside its
     * write (subscribers.ts). Once, by the composition root, before anything is recorded.
     */
    subscribe(ordered: readonly LedgerSubscriber[]): void {
      if (subscribers) throw new Error('the ledger has its subscribers already');
      if (appended) throw new Error('the ledger takes its subscribers before its first record');
      subscribers = Object.freeze([...ordered]);
    },

    /**
     * Appends one record. Only inside store.write(). `options.id` is an `evr_` id taken earlier
     * (`ids.id('evr')`), for a record queued off the hot path whose id was already handed out.
     *
     * It reads the head and writes the next entry in the caller's transaction: a concurrent append
     * to the same ledger (another write, another process) conflicts and its write runs again, so
     * appends are serialized by the store, and no head is kept in memory. Within ONE write, appends
     * are queued one after another (store.currentWrite() names the write), so even a
     * `Promise.all` over `record` gives consecutive indexes. A subscriber must not append itself
     * (it would wait on its own append).
     */
    async record(event: LedgerEvent, options: { id?: string } = {}): Promise<LedgerRecord> {
      // Appends within one write run one after another, whatever the caller awaits: each reads
      // the head the previous one wrote (two at once would both take the same index).
      const write = store.currentWrite() ?? NOT_IN_WRITE;
      const append = async (): Promise<LedgerRecord> => {
        const wid = event.workspaceId;
        const head = { ...((await repo.head(wid)) ?? emptyHead()) };
        const record: LedgerRecord = {
          index: head.size,
          id: options.id ?? ids.id('evr'),
          at: isoAt(clock.now()),
          ...event,
        };
        const bytes = canonicalJson(record);
        const leaf = leafHash(bytes);
        await repo.putEntry(wid, head.size, { bytes, leaf: leaf.toString('base64url') });
        head.size += 1;
        if (head.size - head.checkpointSize >= CHECKPOINT_EVERY_RECORDS) await checkpointInWrite(wid, head);
        await repo.putHead(wid, head);
        appended = true;
        for (const subscriber of subscribers ?? []) await subscriber.onRecordInWrite(record);
        return record;
      };
      const mine = (appending.get(write) ?? Promise.resolve()).then(append);
      appending.set(
        write,
        mine.catch(() => undefined),
      );
      return mine;
    },

    /** Signs a checkpoint for every workspace whose ledger grew since its last one. */
    async checkpointAll(): Promise<number> {
      const stale = (await repo.heads()).filter((e) => e.head.size > e.head.checkpointSize);
      if (stale.length === 0) return 0;
      return store.write(async () => {
        let n = 0;
        for (const { wid } of stale) {
          const head = await repo.head(wid);
          if (!head || head.size <= head.checkpointSize) continue;
          const next = { ...head };
          await checkpointInWrite(wid, next);
          await repo.putHead(wid, next);
          n += 1;
        }
        return n;
      });
    },

    async list(
      wid: string,
      options: { after?: number; limit: number },
    ): Promise<{ data: LedgerRecord[]; next: number | null }> {
      const rows = await repo.entries(wid, {
        ...(options.after === undefined ? {} : { after: options.after }),
        limit: options.limit + 1,
      });
      const page = rows.slice(0, options.limit).map((r) => JSON.parse(r.bytes) as LedgerRecord);
      return { data: page, next: rows.length > options.limit ? page[page.length - 1]!.index : null };
    },

    /**
     * The console's read (search.ts): records matching `filter`, oldest first after `cursor`
     * (`order: 'asc'`) or newest first before it (`'desc'`). At most SCAN_LIMIT records are
     * examined; `next` is the index to resume from (the last one examined), or null at the end.
     */
    async search(
      wid: string,
      options: { filter: LedgerFilter; order: 'asc' | 'desc'; cursor?: number; limit: number },
    ): Promise<{ data: LedgerRecord[]; next: number | null }> {
      const reverse = options.order === 'desc';
      const data: LedgerRecord[] = [];
      let cursor = options.cursor;
      let examined = 0;
      const chunk = Math.min(SCAN_LIMIT, Math.max(options.limit * 4, 200));
      for (;;) {
        const rows = await repo.entries(wid, {
          ...(cursor === undefined ? {} : { after: cursor }),
          reverse,
          limit: chunk,
        });
        for (const row of rows) {
          const record = JSON.parse(row.bytes) as LedgerRecord;
          cursor = record.index;
          examined += 1;
          if (matches(record, options.filter)) data.push(record);
          if (data.length === options.limit) {
            const more = reverse ? record.index > 0 : record.index < ((await repo.head(wid))?.size ?? 0) - 1;
            return { data, next: more ? record.index : null };
          }
          if (examined >= SCAN_LIMIT) {
            const more = rows.length === chunk || row !== rows[rows.length - 1];
            return { data, next: more ? record.index : null };
          }
        }
        if (rows.length < chunk) return { data, next: null };
      }
    },

    /** The newest signed checkpoint, with the ledger's origin and its size now (read after it, so never smaller). */
    async latestCheckpoint(wid: string) {
      const last = (await repo.checkpoints(wid, { reverse: true, limit: 1 }))[0];
      const head = (await repo.head(wid)) ?? emptyHead();
      return {
        origin: originOf(wid, head),
        size: head.size,
        checkpoint: last ? { size: last.size, at: last.at, kid: last.kid, note: last.note } : null,
      };
    },

    head(wid: string): Promise<LedgerHead | undefined> {
      return repo.head(wid);
    },

    /** Checks a workspace's ledger in the store (see verify.ts), and that its head agrees. */
    verify,

    /** "Verify now" in the console: `verify` (what `svc ledger verify` runs), with when it ran. */
    async verifyNow(wid: string): Promise<LedgerVerifyReport & { workspaceId: string; checkedAt: string }> {
      return { workspaceId: wid, ...(await verify(wid)), checkedAt: isoAt(clock.now()) };
    },

    /**
     * The evidence bundle (`GET /v1/admin/evidence`): every record from the first up to the newest signed
     * checkpoint at or before `to` (all of them without `to`), each with the exact bytes that were
     * hashed and its leaf hash; the signed checkpoints; RFC 9162 consistency proofs between
     * consecutive checkpoints; and the JWKS. It always starts at record 0, so that
     * `svc ledger verify --bundle` can recompute every root offline with nothing else. The head and
     * the checkpoints are read before the records (a ledger only grows, so they are all there by
     * then), and the keys after the checkpoints (so the key of each is in the set).
     */
    async bundle(wid: string, options: { to?: string } = {}) {
      const [stored, all] = await Promise.all([repo.head(wid), repo.checkpoints(wid)]);
      const head = stored ?? emptyHead();
      const checkpoints = all.filter((c) => options.to === undefined || c.at <= options.to);
      const size =
        checkpoints.length > 0 ? checkpoints[checkpoints.length - 1]!.size : options.to === undefined ? head.size : 0;
      const [entries, jwks] = await Promise.all([
        size > 0 ? repo.entries(wid, { limit: size }) : Promise.resolve([]),
        signingKeys.jwks(),
      ]);
      const leaves = entries.map((e) => Buffer.from(e.bytes));
      const consistency = checkpoints.slice(1).map((c, i) => ({
        from: checkpoints[i]!.size,
        to: c.size,
        proof: consistencyProof(leaves, checkpoints[i]!.size, c.size).map((h) => h.toString('base64')),
      }));
      return {
        origin: originOf(wid, head),
        records: entries.map((e) => ({ record: JSON.parse(e.bytes) as LedgerRecord, bytes: e.bytes, leaf: e.leaf })),
        checkpoints: checkpoints.map((c) => ({ size: c.size, at: c.at, kid: c.kid, note: c.note })),
        consistency,
        jwks,
      };
    },

    async workspaces(): Promise<string[]> {
      return (await repo.heads()).map((e) => e.wid);
    },
  };
}

export type Ledger = ReturnType<typeof createLedger>;
