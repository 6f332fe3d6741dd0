import { nodeHash } from './merkle.js';
import { TILE_WIDTH, type LedgerTiles } from './tiles.js';

/**
 * The RFC 9162 consistency proof PROOF(m, D[n]) of a workspace ledger, made from its tiles
 * (tiles.ts) rather than from its leaves, so that it costs a few tile reads whatever the size.
 *
 * Why tiles suffice: every hash of the proof is the root of a range [lo, hi) whose left edge lo is
 * a multiple of the largest power of two that fits in it, so the range splits into aligned perfect
 * subtrees; a perfect subtree of 2^h leaves is the root of 2^(h - 8L) consecutive hashes of one
 * tile at level L = floor(h / 8), which the tiles hold as served to verifiers (never past the
 * newest signed checkpoint, which is at least n).
 */

export type TileSource = Pick<LedgerTiles, 'tile'>;

const HASH_BYTES = 32;

function largestPowerOfTwoBelow(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

const isPowerOfTwo = (n: number): boolean => n === 1 || (n > 1 && largestPowerOfTwoBelow(n) * 2 === n);

function rootOfPerfect(hashes: Buffer[]): Buffer {
  let level = hashes;
  while (level.length > 1) {
    const next: Buffer[] = [];
    for (let i = 0; i < level.length; i += 2) next.push(nodeHash(level[i]!, level[i + 1]!));
    level = next;
  }
  return level[0]!;
}

/** Reads the roots of subtrees of one ledger from its tiles. */
function subtreeRoots(tiles: TileSource, wid: string) {
  /** The root of the perfect subtree of `size` (a power of two) leaves starting at `lo` (a multiple of it). */
  const perfect = async (lo: number, size: number): Promise<Buffer> => {
    let level = 0;
    while (TILE_WIDTH ** (level + 1) <= size) level += 1;
    const unit = TILE_WIDTH ** level;
    const count = size / unit;
    const at = lo / unit;
    const index = Math.floor(at / TILE_WIDTH);
    const offset = at % TILE_WIDTH;
    const width = offset + count;
    const bytes = await tiles.tile(wid, { level, index, ...(width === TILE_WIDTH ? {} : { width }) });
    if (bytes === null) throw new Error(`ledger of ${wid}: tile ${level}/${index} is not served yet`);
    const hashes: Buffer[] = [];
    for (let i = offset; i < width; i++) hashes.push(bytes.subarray(i * HASH_BYTES, (i + 1) * HASH_BYTES));
    return rootOfPerfect(hashes);
  };
  /** MTH of leaves [lo, hi), lo a multiple of the largest power of two below hi - lo. */
  const range = async (lo: number, hi: number): Promise<Buffer> => {
    if (isPowerOfTwo(hi - lo)) return perfect(lo, hi - lo);
    const k = largestPowerOfTwoBelow(hi - lo);
    return nodeHash(await perfect(lo, k), await range(lo + k, hi));
  };
  return range;
}

/** PROOF(m, D[n]) for 0 <= m <= n (empty for m = 0 or m = n), each hash as served by the tiles. */
export async function consistencyProofFromTiles(
  tiles: TileSource,
  wid: string,
  m: number,
  n: number,
): Promise<Buffer[]> {
  if (!Number.isSafeInteger(m) || !Number.isSafeInteger(n) || m < 0 || m > n)
    throw new RangeError(`consistency proof: need 0 <= m <= n, got m ${m}, n ${n}`);
  if (m === 0 || m === n) return [];
  const range = subtreeRoots(tiles, wid);
  const proof: Buffer[] = [];
  // The RFC's SUBPROOF, unrolled as in merkle.ts consistencyProof.
  let lo = 0;
  let hi = n;
  let old = m;
  let first = true;
  while (old !== hi - lo) {
    const k = largestPowerOfTwoBelow(hi - lo);
    if (old <= k) {
      proof.push(await range(lo + k, hi));
      hi = lo + k;
    } else {
      proof.push(await range(lo, lo + k));
      old -= k;
      lo += k;
      first = false;
    }
  }
  if (!first) proof.push(await range(lo, hi));
  return proof.reverse();
}
