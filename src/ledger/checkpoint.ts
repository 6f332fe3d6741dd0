import { isoAt } from '../lib/clock.js';
import { emptyHead, originOf, type LedgerParts } from './context.js';
import { appendLeafHashToFrontier, rootFromFrontier } from './merkle.js';
import { checkpointBody, signNote } from './note.js';
import type { LedgerHead } from './records.js';

/**
 * The ledger's signed checkpoints (C2SP signed notes, signed with the ledger key, never the
 * receipt key).
 * Rules:
 * - A checkpoint is signed by each integration batch (integrate.ts), in its write, over the size
 *   it reaches (at most CHECKPOINT_EVERY_RECORDS records); `checkpointAll` (integrate.ts) integrates what waits and signs for any ledger whose head is ahead
 *   of its last checkpoint (a store written before integration signed in the same write).
 * - The head keeps the tree's compact range as of the last checkpoint; a checkpoint extends it
 *   with the leaf hashes stored since, so neither an append nor a checkpoint costs more with the
 *   ledger's size.
 */
export const CHECKPOINT_EVERY_RECORDS = 1000;

/** The newest signed checkpoint of a workspace, with the ledger's origin and its size now. */
export interface LatestCheckpoint {
  origin: string;
  size: number;
  /** Records appended and not yet integrated (no index yet: the next integration gives them one). */
  waiting: number;
  checkpoint: { size: number; at: string; kid: string; note: string } | null;
}

/**
 * Signs a checkpoint over the whole ledger and moves the head's compact range up to it. Inside
 * store.write(). The signature is made in the write: Ed25519 is deterministic, so a write run
 * again signs the same body to the same bytes, and the body is what the write read.
 */
export async function checkpointInWrite(parts: LedgerParts, wid: string, head: LedgerHead): Promise<void> {
  const { repo, clock, signingKeys } = parts;
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
  head.origin = originOf(parts, wid, head);
  const body = checkpointBody({ origin: head.origin, size, rootHash: rootFromFrontier(frontier, size) });
  await repo.putCheckpoint(wid, {
    size,
    note: signNote(body, head.origin, privateKey),
    at: isoAt(clock.now()),
    kid: key.kid,
  });
  head.checkpointSize = size;
  head.checkpointFrontier = frontier;
}

/** The newest signed checkpoint, with the ledger's origin and its size now (read after it, so never smaller). */
export async function latestCheckpoint(parts: LedgerParts, wid: string): Promise<LatestCheckpoint> {
  const { repo } = parts;
  const last = (await repo.checkpoints(wid, { reverse: true, limit: 1 }))[0];
  const head = (await repo.head(wid)) ?? emptyHead();
  const waiting = (await repo.waiting(wid)).length;
  return {
    origin: originOf(parts, wid, head),
    size: head.size,
    waiting,
    checkpoint: last ? { size: last.size, at: last.at, kid: last.kid, note: last.note } : null,
  };
}
