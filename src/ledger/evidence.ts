import type { Jwk } from '../signing/crypto.js';
import { emptyHead, originOf, type LedgerParts } from './context.js';
import { consistencyProof } from './merkle.js';
import type { AppendedRecord, LedgerRecord } from './records.js';

/**
 * The evidence bundle (`GET /v1/admin/evidence`, read by `svc ledger verify --bundle`, bundle.ts):
 * everything needed to recompute every root of a workspace's ledger offline.
 */
export interface EvidenceBundle {
  origin: string;
  /** Each integrated record with the exact bytes that were hashed and its leaf hash. */
  records: Array<{ record: LedgerRecord; bytes: string; leaf: string; integrated: true }>;
  /**
   * Records appended and not yet integrated (no index, under no checkpoint yet), oldest first,
   * with the exact bytes hashed when they were appended and that leaf hash.
   */
  waiting: Array<{ record: AppendedRecord; bytes: string; leaf: string; integrated: false }>;
  checkpoints: Array<{ size: number; at: string; kid: string; note: string }>;
  /** RFC 9162 consistency proofs between consecutive checkpoints (base64). */
  consistency: Array<{ from: number; to: number; proof: string[] }>;
  jwks: { keys: Jwk[] };
}

/**
 * Every record from the first up to the newest signed checkpoint at or before `to` (all of them
 * without `to`); the signed checkpoints; the consistency proofs between consecutive ones; and the
 * JWKS. It always starts at record 0, so that `svc ledger verify --bundle` can recompute every
 * root offline with nothing else. The head and the checkpoints are read before the records (a
 * ledger only grows, so they are all there by then), and the keys after the checkpoints (so the
 * key of each is in the set). Without `to`, the records still waiting are listed too, read
 * before the rest (one integrated meanwhile shows in both lists, never in neither).
 */
export async function evidenceBundle(
  parts: LedgerParts,
  wid: string,
  options: { to?: string } = {},
): Promise<EvidenceBundle> {
  const { repo, signingKeys } = parts;
  const waiting = options.to === undefined ? await repo.waiting(wid) : [];
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
    origin: originOf(parts, wid, head),
    records: entries.map((e) => ({
      record: JSON.parse(e.bytes) as LedgerRecord,
      bytes: e.bytes,
      leaf: e.leaf,
      integrated: true as const,
    })),
    waiting: waiting.map(({ entry: e }) => ({
      record: JSON.parse(e.bytes) as AppendedRecord,
      bytes: e.bytes,
      leaf: e.leaf,
      integrated: false as const,
    })),
    checkpoints: checkpoints.map((c) => ({ size: c.size, at: c.at, kid: c.kid, note: c.note })),
    consistency,
    jwks,
  };
}
