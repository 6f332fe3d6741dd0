import { parseCheckpointBody } from './note.js';
import { nodeHash } from './merkle.js';

/**
 * Inclusion proofs (RFC 9162 2.1.3.1, leaf first) for every leaf of a tree at once, in
 * O(n log n): each subtree's root is computed once and handed down as the sibling of every leaf
 * on the other side, where a proof per leaf (merkle.ts inclusionProof) would rehash the tree n times.
 */
export function allInclusionProofs(leafHashes: readonly Buffer[]): Buffer[][] {
  const paths: Buffer[][] = leafHashes.map(() => []);
  const build = (lo: number, hi: number): Buffer => {
    if (hi - lo === 1) return leafHashes[lo]!;
    let k = 1;
    while (k * 2 < hi - lo) k *= 2;
    const left = build(lo, lo + k);
    const right = build(lo + k, hi);
    for (let i = lo; i < lo + k; i++) paths[i]!.push(right);
    for (let i = lo + k; i < hi; i++) paths[i]!.push(left);
    return nodeHash(left, right);
  };
  if (leafHashes.length > 0) build(0, leafHashes.length);
  return paths;
}

/** A record of an evidence bundle: its exact bytes and leaf hash (base64url). */
interface BundleRecord {
  bytes: string;
  leaf: string;
}

/** What a record gains once a signed checkpoint covers it: its proof against that checkpoint's root. */
export interface Inclusion {
  /** The size of the checkpoint (the newest in the bundle) the proof is for. */
  size: number;
  /** RFC 9162 inclusion path, leaf first, each hash standard base64. */
  proof: string[];
}

/**
 * The evidence bundle with each record under its newest checkpoint given `inclusion`: the proof
 * that its bytes are at its index in the tree that checkpoint signs. Records after it get none.
 */
export function withInclusionProofs<
  B extends { records: BundleRecord[]; checkpoints: Array<{ size: number; note: string }> },
>(bundle: B): Omit<B, 'records'> & { records: Array<B['records'][number] & { inclusion?: Inclusion }> } {
  const last = bundle.checkpoints[bundle.checkpoints.length - 1];
  if (!last) return bundle;
  const size = last.size;
  const proofs = allInclusionProofs(bundle.records.slice(0, size).map((r) => Buffer.from(r.leaf, 'base64url')));
  return {
    ...bundle,
    records: bundle.records.map((r, i) =>
      i < size ? { ...r, inclusion: { size, proof: proofs[i]!.map((h) => h.toString('base64')) } } : r,
    ),
  };
}

/** The root hash a checkpoint note signs (its body's third line), for checking an inclusion proof. */
export function checkpointRoot(note: string): Buffer {
  return parseCheckpointBody(note.slice(0, note.indexOf('\n\n') + 1)).rootHash;
}
