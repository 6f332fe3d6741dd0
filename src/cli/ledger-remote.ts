import { createPublicKey, type KeyObject } from 'node:crypto';
import { cosignaturesIn, parseCosignerKey, type CosignerKey } from '../ledger/cosignature.js';
import { leafHash, nodeHash } from '../ledger/merkle.js';
import { noteKeyId, openNote, parseCheckpointBody, verifierKey } from '../ledger/note.js';
import { encodeTileIndex, TILE_WIDTH } from '../ledger/tiles.js';
import type { LedgerVerifyReport } from '../ledger/verify.js';
import { CliFailure, EXIT } from './base-command.js';
import { openLocal } from './local.js';

/** A workspace ledger's signed-note verifier keys, as `svc ledger key` prints them. */
export interface LedgerKeyLine {
  workspaceId: string;
  origin: string;
  kid: string;
  current: boolean;
  /** `<origin>+<8 hex key id>+<base64(0x01 || Ed25519 public key)>` */
  verifierKey: string;
}

/** Every published ledger key of each workspace's ledger (or one workspace's), from the store, read-only. */
export async function ledgerKeyLines(options: {
  dataDir: string | undefined;
  store: string | undefined;
  workspace: string | undefined;
}): Promise<LedgerKeyLine[]> {
  const app = await openLocal(options.dataDir, { readOnly: true, store: options.store });
  try {
    const { ledger, signingKeys } = app.services;
    const wids = options.workspace ? [options.workspace] : await ledger.workspaces();
    const [jwks, currentKid] = await Promise.all([signingKeys.jwks(), signingKeys.currentKid('ledger')]);
    const keys = jwks.keys.filter((k) => k.use === 'ledger');
    const lines: LedgerKeyLine[] = [];
    for (const wid of wids) {
      const { origin } = await ledger.latestCheckpoint(wid);
      for (const k of keys) {
        const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: k.x }, format: 'jwk' });
        lines.push({
          workspaceId: wid,
          origin,
          kid: k.kid,
          current: k.kid === currentKid,
          verifierKey: verifierKey(origin, publicKey),
        });
      }
    }
    return lines;
  } finally {
    await app.close();
  }
}

/** Reads a verifier key `<name>+<hex key id>+<base64(0x01 || key)>`; a usage error when malformed. */
export function parseVerifierKey(text: string): { name: string; publicKey: KeyObject } {
  const bad = (why: string) =>
    new CliFailure(`--key is not a signed-note verifier key (${why}); svc ledger key prints it`, {
      exit: EXIT.usage,
      type: 'invalid_request',
    });
  // The name and the hex key id hold no '+'; the base64 key may.
  const first = text.indexOf('+');
  const second = first < 0 ? -1 : text.indexOf('+', first + 1);
  if (second < 0) throw bad('want <name>+<key id>+<key>');
  const [name, id, encoded] = [text.slice(0, first), text.slice(first + 1, second), text.slice(second + 1)];
  const raw = Buffer.from(encoded, 'base64');
  if (raw.length !== 33 || raw[0] !== 0x01) throw bad('not an Ed25519 key');
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey({
      key: { kty: 'OKP', crv: 'Ed25519', x: raw.subarray(1).toString('base64url') },
      format: 'jwk',
    });
    if (noteKeyId(name, publicKey).toString('hex') !== id.toLowerCase()) throw bad('its key id does not match');
  } catch (err) {
    if (err instanceof CliFailure) throw err;
    throw bad('unreadable');
  }
  return { name, publicKey };
}

/** Reads the --witness keys (cosignature/v1 Ed25519 verifier keys); a usage error when one is malformed. */
export function parseWitnessKeys(texts: readonly string[]): CosignerKey[] {
  return texts.map((text) => {
    try {
      return parseCosignerKey(text);
    } catch (err) {
      throw new CliFailure(`--witness ${JSON.stringify(text)}: ${(err as Error).message}`, {
        exit: EXIT.usage,
        type: 'invalid_request',
      });
    }
  });
}

/**
 * Null when the checkpoint carries valid cosignatures (C2SP tlog-cosignature) by at least `quorum`
 * of the given witnesses (each counted once); otherwise what is missing.
 */
export function quorumProblem(
  note: string,
  body: string,
  witnesses: readonly CosignerKey[],
  quorum: number,
): string | null {
  const by = witnesses.filter((w) => cosignaturesIn(note, body, w).length > 0).map((w) => w.name);
  if (by.length >= quorum) return null;
  const named = by.length === 0 ? 'none of the given witnesses' : by.join(', ');
  return `the checkpoint is cosigned by ${named}: ${by.length} of the ${quorum} required by --quorum`;
}

type Get = (path: string) => Promise<Buffer>;

function fetcher(base: string, token: string | undefined): Get {
  const root = base.endsWith('/') ? base : `${base}/`;
  return async (path) => {
    let res: Response;
    try {
      res = await fetch(new URL(path, root), { headers: token ? { authorization: `Bearer ${token}` } : {} });
    } catch (err) {
      throw new CliFailure(`cannot reach ${root}: ${(err as Error).message}`, {
        exit: EXIT.unreachable,
        type: 'unreachable',
      });
    }
    if (res.status !== 200)
      throw new CliFailure(`GET ${new URL(path, root).href} answered ${res.status}`, {
        exit: res.status === 401 || res.status === 403 ? EXIT.usage : EXIT.unreachable,
        type: 'unreachable',
      });
    return Buffer.from(await res.arrayBuffer());
  };
}

/** The entries of an entry bundle (each after its big-endian 16-bit length), or null when malformed. */
export function splitBundle(bundle: Buffer): Buffer[] | null {
  const out: Buffer[] = [];
  for (let at = 0; at < bundle.length;) {
    if (at + 2 > bundle.length) return null;
    const n = bundle.readUInt16BE(at);
    if (at + 2 + n > bundle.length) return null;
    out.push(bundle.subarray(at + 2, at + 2 + n));
    at += 2 + n;
  }
  return out;
}

const tileName = (level: number | 'entries', index: number, width: number) =>
  `tile/${level}/${encodeTileIndex(index)}${width === TILE_WIDTH ? '' : `.p/${width}`}`;

function splitTile(data: Buffer, width: number): Buffer[] | null {
  if (data.length !== width * 32) return null;
  return Array.from({ length: width }, (_, i) => data.subarray(i * 32, i * 32 + 32));
}

/** MTH over hashes (RFC 9162: split at the largest power of two below the count). */
function rootOfHashes(hashes: readonly Buffer[]): Buffer {
  if (hashes.length === 1) return hashes[0]!;
  let k = 1;
  while (k * 2 < hashes.length) k *= 2;
  return nodeHash(rootOfHashes(hashes.slice(0, k)), rootOfHashes(hashes.slice(k)));
}

/**
 * Verifies a ledger served in the tlog-tiles layout from its checkpoint, tiles and entry bundles
 * alone: the checkpoint's signature by `key`, its cosignatures by a quorum of `witnesses`, every entry's leaf hash against the level-0 tiles,
 * every tile level against the one below, and the root the tiles give against the signed one.
 */
export async function verifyRemote(options: {
  url: string;
  key: string;
  token?: string;
  /** Witness verifier keys, of which `quorum` must have cosigned the checkpoint. */
  witnesses?: readonly string[];
  quorum?: number;
}): Promise<LedgerVerifyReport> {
  const { name, publicKey } = parseVerifierKey(options.key);
  const witnesses = parseWitnessKeys(options.witnesses ?? []);
  const quorum = options.quorum ?? witnesses.length;
  if (quorum > witnesses.length)
    throw new CliFailure(`--quorum ${quorum} needs at least ${quorum} --witness keys, got ${witnesses.length}`, {
      exit: EXIT.usage,
      type: 'invalid_request',
    });
  const get = fetcher(options.url, options.token);
  const report = (size: number, origin: string, firstBadIndex: number | null, problem: string | null) => ({
    ok: problem === null,
    origin,
    size,
    checkpoints: 1,
    uncheckpointed: 0,
    firstBadIndex,
    problem,
  });
  const note = (await get('checkpoint')).toString('utf8');
  const opened = openNote(note, name, publicKey);
  if (!opened) return report(0, name, null, `the checkpoint is not signed by ${verifierKey(name, publicKey)}`);
  const { origin, size, rootHash } = parseCheckpointBody(opened.body);
  const unwitnessed = quorum > 0 ? quorumProblem(note, opened.body, witnesses, quorum) : null;
  if (unwitnessed) return report(size, origin, null, unwitnessed);
  if (size === 0) return report(0, origin, null, rootHash.equals(rootOfEmpty()) ? null : 'the empty root is wrong');
  // Level 0 from the entry bundles, checked against the served level-0 tiles.
  const leaves: Buffer[] = [];
  for (let start = 0; start < size; start += TILE_WIDTH) {
    const width = Math.min(TILE_WIDTH, size - start);
    const entries = splitBundle(await get(tileName('entries', start / TILE_WIDTH, width)));
    const tile = splitTile(await get(tileName(0, start / TILE_WIDTH, width)), width);
    if (entries?.length !== width)
      return report(size, origin, start, `entry bundle ${start / TILE_WIDTH} is malformed`);
    if (!tile) return report(size, origin, start, `tile 0/${start / TILE_WIDTH} is malformed`);
    for (let i = 0; i < width; i++) {
      if (!leafHash(entries[i]!).equals(tile[i]!))
        return report(size, origin, start + i, `entry ${start + i} does not match its leaf hash in the tiles`);
    }
    leaves.push(...tile);
  }
  // Each higher level: its served tiles must be the roots of 256 hashes of the level below.
  let below = leaves;
  for (let l = 1; TILE_WIDTH ** l <= size; l++) {
    const count = Math.floor(size / TILE_WIDTH ** l);
    const level: Buffer[] = [];
    for (let n = 0; n * TILE_WIDTH < count; n++) {
      const width = Math.min(TILE_WIDTH, count - n * TILE_WIDTH);
      const tile = splitTile(await get(tileName(l, n, width)), width);
      if (!tile) return report(size, origin, null, `tile ${l}/${n} is malformed`);
      for (let i = 0; i < width; i++) {
        const k = n * TILE_WIDTH + i;
        if (!rootOfHashes(below.slice(k * TILE_WIDTH, (k + 1) * TILE_WIDTH)).equals(tile[i]!))
          return report(size, origin, k * TILE_WIDTH ** l, `tile ${l}/${n} does not match the level below`);
      }
      level.push(...tile);
    }
    below = level;
  }
  if (!rootOfHashes(leaves).equals(rootHash))
    return report(size, origin, null, 'the tiles do not give the signed root hash');
  return report(size, origin, null, null);
}

function rootOfEmpty(): Buffer {
  return Buffer.from('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', 'hex');
}
