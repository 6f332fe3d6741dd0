import type { Store } from '../store/index.js';
import { nodeHash } from './merkle.js';
import { ledgerRepo } from './repo.js';

/**
 * A workspace ledger in the C2SP tlog-tiles layout, read-only, for verifiers outside svc.
 *
 * Rules:
 * - The log a verifier sees is the tree of the newest signed checkpoint: tiles and entry bundles
 *   cover its size and no more, so everything served hangs off a signature (a tile or bundle
 *   beyond it answers null, which the route turns into 404).
 * - Tiles have height 8: a tile at level L holds, left to right, the hashes of the complete
 *   subtrees of 256^L leaves; a full tile has 256 of them, a partial one `.p/<W>` the first W.
 *   Level 0 holds the leaf hashes stored with each entry (RFC 9162 SHA-256(0x00 || bytes)).
 * - An entry bundle holds the same entries' exact bytes (the RFC 8785 JSON that was hashed),
 *   each after its length as a big-endian 16-bit number.
 * - The checkpoint is served with the witnesses' cosignatures stored for it (witness.ts) after
 *   the log's own signature, as further signature lines of the same note.
 * - Tile and bundle contents for a given path never change once served (a ledger only grows), so
 *   full tiles are kept in a small memory cache and every such answer may be cached for good.
 */

/** Hashes per full tile (2^8). */
export const TILE_WIDTH = 256;
const HASH_BYTES = 32;
const MAX_ENTRY_BYTES = 0xffff;
/** Full tiles kept in memory (8 KiB each). */
const CACHED_TILES = 512;

/** A tile path after `tile/`: a hash tile at `level`, or the entry bundle (`level: 'entries'`). */
export interface TileRef {
  level: number | 'entries';
  index: number;
  /** Set for a partial tile (`.p/<W>`), 1 to 255. */
  width?: number;
}

const GROUP = /^\d{3}$/;
const LEVEL = /^(?:0|[1-9]\d?)$/;
const WIDTH = /^[1-9]\d{0,2}$/;

/** The C2SP index path: 3-digit groups, all but the last prefixed with `x` (1234067 → x001/x234/067). */
export function encodeTileIndex(index: number): string {
  const groups: string[] = [];
  let n = index;
  do {
    groups.unshift(String(n % 1000).padStart(3, '0'));
    n = Math.floor(n / 1000);
  } while (n > 0);
  return groups.map((g, i) => (i < groups.length - 1 ? `x${g}` : g)).join('/');
}

/** `<L>/<N>[.p/<W>]` or `entries/<N>[.p/<W>]` as a TileRef; null unless it is exactly the canonical path. */
export function parseTilePath(path: string): TileRef | null {
  const parts = path.split('/');
  const levelText = parts.shift();
  if (levelText === undefined) return null;
  const level = levelText === 'entries' ? 'entries' : LEVEL.test(levelText) ? Number(levelText) : null;
  if (level === null || (typeof level === 'number' && level > 5)) return null;
  let width: number | undefined;
  if (parts.length >= 2 && parts[parts.length - 2]!.endsWith('.p')) {
    const w = parts.pop()!;
    if (!WIDTH.test(w) || Number(w) >= TILE_WIDTH) return null;
    width = Number(w);
    parts[parts.length - 1] = parts[parts.length - 1]!.slice(0, -2);
  }
  if (parts.length === 0 || parts.length > 5) return null;
  let index = 0;
  for (const [i, part] of parts.entries()) {
    const digits = i < parts.length - 1 ? (part.startsWith('x') ? part.slice(1) : '') : part;
    if (!GROUP.test(digits)) return null;
    index = index * 1000 + Number(digits);
  }
  if (encodeTileIndex(index) !== parts.join('/')) return null;
  return { level, index, ...(width === undefined ? {} : { width }) };
}

/** The path of a tile after `tile/`, as parseTilePath reads it. */
export function tilePath(ref: TileRef): string {
  return `${ref.level}/${encodeTileIndex(ref.index)}${ref.width === undefined ? '' : `.p/${ref.width}`}`;
}

/** The root of a perfect subtree from its 2^k hashes, left to right. */
function perfectRoot(hashes: readonly Buffer[]): Buffer {
  let level = [...hashes];
  while (level.length > 1) {
    const next: Buffer[] = [];
    for (let i = 0; i < level.length; i += 2) next.push(nodeHash(level[i]!, level[i + 1]!));
    level = next;
  }
  return level[0]!;
}

/** A ledger's checkpoint, tiles and entry bundles as a verifier outside svc reads them. */
export interface LedgerTiles {
  /**
   * The newest signed checkpoint (a C2SP signed note) with the witnesses' cosignature lines stored
   * for it, or null when none is signed yet. Reads the checkpoints and their cosignatures.
   */
  checkpoint(wid: string): Promise<string | null>;
  /**
   * The bytes of a tile or entry bundle of the log as of the newest signed checkpoint; null when
   * it lies beyond that log (or a full tile is asked for where only a partial one exists).
   * Reads the checkpoints and the entries it covers.
   */
  tile(wid: string, ref: TileRef): Promise<Buffer | null>;
}

export interface LedgerTilesDeps {
  store: Store;
}

export function createLedgerTiles(deps: LedgerTilesDeps): LedgerTiles {
  const repo = ledgerRepo(deps.store);
  const cache = new Map<string, Buffer[]>();

  const signedSize = async (wid: string): Promise<{ size: number; note: string } | null> => {
    const last = (await repo.checkpoints(wid, { reverse: true, limit: 1 }))[0];
    return last ? { size: last.size, note: last.note } : null;
  };

  /** Hashes of tile `index` at `level`, its first `width` (all of them must exist in the log). */
  const hashes = async (wid: string, level: number, index: number, width: number): Promise<Buffer[]> => {
    const key = `${wid}\u0000${level}\u0000${index}`;
    const cached = cache.get(key);
    if (cached) return cached.slice(0, width);
    let out: Buffer[];
    if (level === 0) {
      const rows = await repo.entries(wid, { after: index * TILE_WIDTH - 1, limit: width });
      out = rows.map((r) => Buffer.from(r.leaf, 'base64url'));
    } else {
      out = [];
      for (let i = 0; i < width; i++)
        out.push(perfectRoot(await hashes(wid, level - 1, index * TILE_WIDTH + i, TILE_WIDTH)));
    }
    if (out.length !== width || out.some((h) => h.length !== HASH_BYTES))
      throw new Error(`ledger of ${wid}: tile ${level}/${index} lacks stored entries`);
    if (width === TILE_WIDTH) {
      if (cache.size >= CACHED_TILES) cache.delete(cache.keys().next().value!);
      cache.set(key, out);
    }
    return out;
  };

  /** How many items tile `index` of `level` holds in a log of `size` (0: beyond it). */
  const available = (size: number, level: number, index: number): number => {
    const atLevel = Math.floor(size / TILE_WIDTH ** level);
    return Math.max(0, Math.min(TILE_WIDTH, atLevel - index * TILE_WIDTH));
  };

  const entryBundle = async (wid: string, index: number, width: number): Promise<Buffer> => {
    const rows = await repo.entries(wid, { after: index * TILE_WIDTH - 1, limit: width });
    if (rows.length !== width) throw new Error(`ledger of ${wid}: entry bundle ${index} lacks stored entries`);
    const parts: Buffer[] = [];
    for (const row of rows) {
      const bytes = Buffer.from(row.bytes, 'utf8');
      if (bytes.length > MAX_ENTRY_BYTES)
        throw new Error(`ledger of ${wid}: an entry is over ${MAX_ENTRY_BYTES} bytes`);
      const length = Buffer.alloc(2);
      length.writeUInt16BE(bytes.length);
      parts.push(length, bytes);
    }
    return Buffer.concat(parts);
  };

  return {
    async checkpoint(wid) {
      const signed = await signedSize(wid);
      if (!signed) return null;
      const cosigned = await repo.cosignatures(wid, signed.size);
      return signed.note + (cosigned?.lines ?? []).map((l) => `${l.line}\n`).join('');
    },
    async tile(wid, ref) {
      const signed = await signedSize(wid);
      if (!signed) return null;
      const has = available(signed.size, ref.level === 'entries' ? 0 : ref.level, ref.index);
      const width = ref.width ?? TILE_WIDTH;
      if (has === 0 || width > has) return null;
      if (ref.level === 'entries') return entryBundle(wid, ref.index, width);
      return Buffer.concat(await hashes(wid, ref.level, ref.index, width));
    },
  };
}
