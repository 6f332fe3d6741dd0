import { createHash } from 'node:crypto';

/**
 * RFC 9162 section 2.1 Merkle Tree Hash over SHA-256, with its inclusion and consistency proofs
 * and a compact range ("frontier") so the log can grow without rereading old leaves.
 *
 * Invariants:
 * - A "leaf" is always the entry's exact bytes D[i]; this module applies leafHash itself.
 *   Leaf and interior hashes are domain-separated (0x00 and 0x01 prefixes), so no interior node
 *   can be passed off as a leaf.
 * - The hash of the empty tree is SHA-256 of the empty string.
 * - A frontier for size s has popcount(s) entries, largest (leftmost) subtree first, each the
 *   canonical unpadded base64url of a 32-byte hash; anything else is rejected with a RangeError.
 * - Proof builders throw RangeError on sizes or indexes the spec does not define; verifiers never
 *   throw and answer false for anything malformed (wrong lengths, non-integer sizes, m > n).
 * - Sizes and indexes are safe integers; arithmetic avoids 32-bit bitwise operators.
 */

const HASH_BYTES = 32;

/** Compact range: roots of the perfect subtrees covering leaves [0, size), largest (leftmost) first, as base64url strings, so it can be stored as JSON. Its length equals popcount(size). */
export type Frontier = string[];

const LEAF_PREFIX = Buffer.from([0x00]);
const NODE_PREFIX = Buffer.from([0x01]);
// 32 bytes are 43 base64url characters; the last one carries 4 bits and 2 zero bits of padding,
// so only these 16 letters keep the encoding canonical (one spelling per hash).
const FRONTIER_NODE = /^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/;

/** SHA-256(0x00 || bytes); a string is hashed as its UTF-8 bytes. */
export function leafHash(bytes: Uint8Array | string): Buffer {
  return createHash('sha256').update(LEAF_PREFIX).update(bytes).digest();
}

/** SHA-256(0x01 || left || right). */
export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  return createHash('sha256').update(NODE_PREFIX).update(left).update(right).digest();
}

/** MTH(D[n]) for the given leaves; the empty list gives SHA-256 of the empty string. */
export function rootOf(leaves: readonly Uint8Array[]): Buffer {
  return rangeRoot(
    leaves.map((leaf) => leafHash(leaf)),
    0,
    leaves.length,
  );
}

/** The frontier for size + 1 after appending `leaf`; the input is not mutated. */
export function appendToFrontier(frontier: Frontier, size: number, leaf: Uint8Array): Frontier {
  return appendLeafHashToFrontier(frontier, size, leafHash(leaf));
}

/** As appendToFrontier, for a leaf whose hash (SHA-256(0x00 || bytes)) is already known. */
export function appendLeafHashToFrontier(frontier: Frontier, size: number, hashOfLeaf: Uint8Array): Frontier {
  checkFrontier(frontier, size);
  const kept = [...frontier];
  let hash: Buffer = Buffer.from(hashOfLeaf);
  // Each trailing 1 bit of size is a perfect subtree of the same height as the new one: merge.
  for (let s = size; s % 2 === 1; s = (s - 1) / 2) hash = nodeHash(Buffer.from(kept.pop()!, 'base64url'), hash);
  kept.push(hash.toString('base64url'));
  return kept;
}

/** The tree root for `size` leaves from its frontier; equals rootOf(all leaves). */
export function rootFromFrontier(frontier: Frontier, size: number): Buffer {
  checkFrontier(frontier, size);
  const nodes = frontier.map((node) => Buffer.from(node, 'base64url'));
  if (nodes.length === 0) return emptyRoot();
  let root: Buffer = nodes[nodes.length - 1]!;
  for (let i = nodes.length - 2; i >= 0; i--) root = nodeHash(nodes[i]!, root);
  return root;
}

/** RFC 9162 2.1.3.1 PATH(index, D[n]); n defaults to leaves.length. */
export function inclusionProof(leaves: readonly Uint8Array[], index: number, n: number = leaves.length): Buffer[] {
  if (!isSize(n) || n > leaves.length || !isSize(index) || index >= n) {
    throw new RangeError(`inclusionProof: need 0 <= index < n <= ${leaves.length}, got index ${index}, n ${n}`);
  }
  const hashes = leaves.slice(0, n).map((leaf) => leafHash(leaf));
  const path: Buffer[] = [];
  // Walk down from the root, recording the sibling subtree at each split; the RFC lists the
  // path leaf-first, so the siblings are reversed at the end.
  let lo = 0;
  let hi = n;
  while (hi - lo > 1) {
    const k = largestPowerOfTwoBelow(hi - lo);
    if (index < lo + k) {
      path.push(rangeRoot(hashes, lo + k, hi));
      hi = lo + k;
    } else {
      path.push(rangeRoot(hashes, lo, lo + k));
      lo += k;
    }
  }
  return path.reverse();
}

/** RFC 9162 2.1.4.1 PROOF(m, D[n]) for 0 < m <= n; n defaults to leaves.length; m == n gives []. */
export function consistencyProof(leaves: readonly Uint8Array[], m: number, n: number = leaves.length): Buffer[] {
  if (!isSize(n) || n > leaves.length || !isSize(m) || m < 1 || m > n) {
    throw new RangeError(`consistencyProof: need 0 < m <= n <= ${leaves.length}, got m ${m}, n ${n}`);
  }
  const hashes = leaves.slice(0, n).map((leaf) => leafHash(leaf));
  const proof: Buffer[] = [];
  // SUBPROOF(m, D[lo:hi], b), unrolled: the recursion is a single descent that appends one
  // sibling per level, so collect them and reverse (the RFC appends on the way back up).
  let lo = 0;
  let hi = n;
  let old = m; // the old tree's size within [lo, hi)
  let first = true; // still on the old tree's left edge, whose root the verifier already has
  while (old !== hi - lo) {
    const k = largestPowerOfTwoBelow(hi - lo);
    if (old <= k) {
      proof.push(rangeRoot(hashes, lo + k, hi));
      hi = lo + k;
    } else {
      proof.push(rangeRoot(hashes, lo, lo + k));
      old -= k;
      lo += k;
      first = false;
    }
  }
  if (!first) proof.push(rangeRoot(hashes, lo, hi));
  return proof.reverse();
}

/** RFC 9162 2.1.3.2: does `proof` show that `leaf` (the entry's bytes) is at `index` in the tree of size n with `root`? Never throws. */
export function verifyInclusion(
  index: number,
  n: number,
  leaf: Uint8Array,
  root: Uint8Array,
  proof: readonly Uint8Array[],
): boolean {
  try {
    if (!isSize(index) || !isSize(n) || index >= n || !isHash(root) || !proof.every(isHash)) return false;
    let fn = index;
    let sn = n - 1;
    let r = leafHash(leaf);
    for (const p of proof) {
      if (sn === 0) return false;
      if (fn % 2 === 1 || fn === sn) {
        r = nodeHash(p, r);
        while (fn % 2 === 0 && fn !== 0) {
          fn /= 2;
          sn = Math.floor(sn / 2);
        }
      } else {
        r = nodeHash(r, p);
      }
      fn = Math.floor(fn / 2);
      sn = Math.floor(sn / 2);
    }
    return sn === 0 && r.equals(root);
  } catch {
    return false;
  }
}

/** RFC 9162 2.1.4.2: is the tree of size n with rootN an append-only extension of the tree of size m with rootM? Needs 0 < m <= n. Never throws. */
export function verifyConsistency(
  m: number,
  n: number,
  rootM: Uint8Array,
  rootN: Uint8Array,
  proof: readonly Uint8Array[],
): boolean {
  try {
    if (!isSize(m) || !isSize(n) || m < 1 || m > n || !isHash(rootM) || !isHash(rootN) || !proof.every(isHash))
      return false;
    if (m === n) return proof.length === 0 && Buffer.from(rootM).equals(rootN);
    if (proof.length === 0) return false;
    const path = isPowerOfTwo(m) ? [rootM, ...proof] : [...proof];
    let fn = m - 1;
    let sn = n - 1;
    while (fn % 2 === 1) {
      fn = (fn - 1) / 2;
      sn = Math.floor(sn / 2);
    }
    let fr: Buffer = Buffer.from(path[0]!);
    let sr: Buffer = fr;
    for (const c of path.slice(1)) {
      if (sn === 0) return false;
      if (fn % 2 === 1 || fn === sn) {
        fr = nodeHash(c, fr);
        sr = nodeHash(c, sr);
        while (fn % 2 === 0 && fn !== 0) {
          fn /= 2;
          sn = Math.floor(sn / 2);
        }
      } else {
        sr = nodeHash(sr, c);
      }
      fn = Math.floor(fn / 2);
      sn = Math.floor(sn / 2);
    }
    return sn === 0 && fr.equals(rootM) && sr.equals(rootN);
  } catch {
    return false;
  }
}

/** MTH over leaf hashes [lo, hi), level by level: pair neighbours, carry an odd last node up unchanged. */
function rangeRoot(hashes: readonly Buffer[], lo: number, hi: number): Buffer {
  if (hi === lo) return emptyRoot();
  let level = hashes.slice(lo, hi);
  while (level.length > 1) {
    const next: Buffer[] = [];
    for (let i = 0; i + 1 < level.length; i += 2) next.push(nodeHash(level[i]!, level[i + 1]!));
    if (level.length % 2 === 1) next.push(level[level.length - 1]!);
    level = next;
  }
  return level[0]!;
}

function checkFrontier(frontier: Frontier, size: number): void {
  if (!isSize(size)) throw new RangeError(`frontier: size must be a non-negative safe integer, got ${size}`);
  if (!Array.isArray(frontier) || frontier.length !== popcount(size)) {
    throw new RangeError(
      `frontier: size ${size} needs ${popcount(size)} nodes, got ${Array.isArray(frontier) ? frontier.length : typeof frontier}`,
    );
  }
  const bad = frontier.findIndex((node) => typeof node !== 'string' || !FRONTIER_NODE.test(node));
  if (bad >= 0)
    throw new RangeError(`frontier: node ${bad} is not the unpadded base64url of a ${HASH_BYTES}-byte hash`);
}

function emptyRoot(): Buffer {
  return createHash('sha256').digest();
}

function isSize(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}

function isHash(value: unknown): value is Uint8Array {
  return value instanceof Uint8Array && value.length === HASH_BYTES;
}

function popcount(size: number): number {
  let count = 0;
  for (let s = size; s > 0; s = Math.floor(s / 2)) count += s % 2;
  return count;
}

function isPowerOfTwo(value: number): boolean {
  return popcount(value) === 1;
}

/** The largest power of two strictly below n, for n >= 2 (the RFC's k). */
function largestPowerOfTwoBelow(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}
