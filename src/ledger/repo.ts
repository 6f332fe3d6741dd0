import type { KeyPart, Store } from '../store/index.js';
import type {
  CheckpointRecord,
  CosignaturesRecord,
  LedgerEntry,
  LedgerHead,
  LedgerLease,
  WaitingEntry,
} from './records.js';

/** A waiting record's key: [wid, appendedAtMs, seq, id] (see append.ts). */
export type WaitingKey = [string, number, number, string];

// Sorts after every number and every id (ids are ASCII): past every waiting key of one workspace.
const KEY_END = '\uffff';

/**
 * The ledger's reads and writes: per workspace, its head, its integrated entries ([wid, index]),
 * its waiting entries ([wid, appendedAtMs, seq, id]), its signed checkpoints ([wid, size]) and the
 * witnesses' cosignatures of them ([wid, size]), and the integrator's lease. Inside a store write,
 * reads see and writes join that write's transaction (the store's ambient transaction).
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
    /** Every workspace that has integrated records, with its head. */
    async heads(): Promise<Array<{ wid: string; head: LedgerHead }>> {
      return (await t.ledgerHeads.scan([])).map((e) => ({ wid: String(e.key[0]), head: e.value }));
    },
    /** Integrated entries in index order (newest first with `reverse`); `after` is an index (exclusive). */
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
    /** Waiting entries in key order (oldest first), with their keys. */
    async waiting(
      wid: string,
      options: { limit?: number } = {},
    ): Promise<Array<{ key: WaitingKey; entry: WaitingEntry }>> {
      return (await t.ledgerWaiting.scan([wid], options)).map((e) => ({ key: e.key as WaitingKey, entry: e.value }));
    },
    /** Every workspace with records waiting, with its oldest waiting key (one short read per workspace). */
    async waitingWorkspaces(): Promise<WaitingKey[]> {
      const out: WaitingKey[] = [];
      let next = await t.ledgerWaiting.scan([], { limit: 1 });
      while (next.length > 0) {
        const key = next[0]!.key as WaitingKey;
        out.push(key);
        next = await t.ledgerWaiting.scan([], { startAfter: [key[0], KEY_END], limit: 1 });
      }
      return out;
    },
    /** Only inside store.write(). */
    putWaiting(key: WaitingKey, entry: WaitingEntry): Promise<void> {
      return t.ledgerWaiting.put(key, entry);
    },
    /** Only inside store.write(). */
    removeWaiting(key: WaitingKey): Promise<void> {
      return t.ledgerWaiting.remove(key as KeyPart[]);
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
    lease(name: string): Promise<LedgerLease | undefined> {
      return t.ledgerLeases.get(name);
    },
    /** Only inside store.write(). */
    putLease(name: string, lease: LedgerLease): Promise<void> {
      return t.ledgerLeases.put(name, lease);
    },
  };
}

export type LedgerRepo = ReturnType<typeof ledgerRepo>;
