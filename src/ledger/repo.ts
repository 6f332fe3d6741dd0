import type { Store } from '../store/index.js';
import type { CheckpointRecord, CosignaturesRecord, LedgerEntry, LedgerHead } from './records.js';

/**
 * The ledger's reads and writes: per workspace, its head, its entries ([wid, index]) and its
 * signed checkpoints ([wid, size]) and the witnesses' cosignatures of them ([wid, size]). Inside a store write, reads see and writes join that write's
 * transaction (the store's ambient transaction), so an append that reads the head and writes the
 * next entry conflicts with, and retries after, a concurrent append to the same ledger.
 */
export function ledgerRepo(store: Store) {
  const t = store.tables;
  return {
    head(wid: string): Promise<LedgerHead | undefined> {
      return t.ledgerHeads.get(wid);
    },
    /** Only inside store.write(). */
    putHead(wid: string, head: LedgerHead): Promise<void> {
      return t.ledgerHeads.put(wid, head);
    },
    /** Every workspace that has a ledger, with its head. */
    async heads(): Promise<Array<{ wid: string; head: LedgerHead }>> {
      return (await t.ledgerHeads.scan([])).map((e) => ({ wid: String(e.key[0]), head: e.value }));
    },
    /** Entries in index order (newest first with `reverse`); `after` is an index (exclusive). */
    async entries(
      wid: string,
      options: { after?: number; limit?: number; reverse?: boolean } = {},
    ): Promise<LedgerEntry[]> {
      return (await t.ledger.scan([wid], options)).map((e) => e.value);
    },
    /** Only inside store.write(). */
    putEntry(wid: string, index: number, entry: LedgerEntry): Promise<void> {
      return t.ledger.put([wid, index], entry);
    },
    /** Signed checkpoints in size order (newest first with `reverse`). */
    async checkpoints(wid: string, options: { limit?: number; reverse?: boolean } = {}): Promise<CheckpointRecord[]> {
      return (await t.checkpoints.scan([wid], options)).map((e) => e.value);
    },
    /** Only inside store.write(). */
    putCheckpoint(wid: string, checkpoint: CheckpointRecord): Promise<void> {
      return t.checkpoints.put([wid, checkpoint.size], checkpoint);
    },
    /** The witnesses' cosignatures of the checkpoint of `size`, if any. */
    cosignatures(wid: string, size: number): Promise<CosignaturesRecord | undefined> {
      return t.cosignatures.get([wid, size]);
    },
    /** Only inside store.write(). */
    putCosignatures(wid: string, record: CosignaturesRecord): Promise<void> {
      return t.cosignatures.put([wid, record.size], record);
    },
  };
}

export type LedgerRepo = ReturnType<typeof ledgerRepo>;
