import { createPublicKey, type KeyObject } from 'node:crypto';
import { canonicalJson } from '../lib/canonical-json.js';
import { consistencyProof, leafHash, rootOf, verifyConsistency } from './merkle.js';
import { openNote, parseCheckpointBody } from './note.js';

/**
 * Verifies a ledger from its records and signed checkpoints alone (the store's, or an evidence
 * bundle's), with nothing but the public ledger keys.
 * Checks, in order; the first failure names the first bad record index:
 * 1. Record i has index i, its stored bytes are the RFC 8785 form of the record they hold, and,
 *    when a leaf hash was stored, it is SHA-256(0x00 || bytes).
 * 2. Every checkpoint is a signed note by a ledger key (`use: "ledger"`), for this ledger's origin.
 * 3. Every checkpoint's root equals the Merkle root recomputed over its first `size` records; a
 *    checkpoint over more records than exist means records were removed.
 * 4. Consecutive checkpoints are consistent (an RFC 9162 consistency proof between them verifies),
 *    so no checkpointed history was rewritten.
 * A mismatch at a checkpoint cannot say which of the records since the last good checkpoint was
 * changed; it names the first of them.
 */
export interface LedgerVerifyInput {
  origin: string;
  /** In index order. `leaf`, when given, is the stored leaf hash (base64url). */
  records: ReadonlyArray<{ bytes: string; leaf?: string }>;
  checkpoints: ReadonlyArray<{ note: string }>;
  /** JWKS; only keys with `use: "ledger"` count. */
  jwks: { keys: ReadonlyArray<object> };
}

export interface LedgerVerifyReport {
  ok: boolean;
  origin: string;
  size: number;
  checkpoints: number;
  /** Records after the last checkpoint (not yet covered by a signature). */
  uncheckpointed: number;
  firstBadIndex: number | null;
  problem: string | null;
}

function ledgerKeys(jwks: LedgerVerifyInput['jwks']): KeyObject[] {
  const out: KeyObject[] = [];
  for (const key of jwks.keys) {
    const k = key as Record<string, unknown>;
    if (k.use !== 'ledger' || k.kty !== 'OKP' || k.crv !== 'Ed25519' || typeof k.x !== 'string') continue;
    try {
      out.push(createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: k.x }, format: 'jwk' }));
    } catch {
      // A malformed key verifies nothing.
    }
  }
  return out;
}

function noteBody(note: string): string {
  const end = note.indexOf('\n\n');
  return end < 0 ? note : note.slice(0, end + 1);
}

export function verifyLedger(input: LedgerVerifyInput): LedgerVerifyReport {
  const n = input.records.length;
  const report = (firstBadIndex: number | null, problem: string | null, checkpoints = 0, lastSize = 0): LedgerVerifyReport => ({
    ok: problem === null, origin: input.origin, size: n, checkpoints, uncheckpointed: n - lastSize, firstBadIndex, problem,
  });

  const leaves: Buffer[] = [];
  for (let i = 0; i < n; i += 1) {
    const { bytes, leaf } = input.records[i]!;
    let parsed: { index?: unknown };
    try {
      parsed = JSON.parse(bytes) as { index?: unknown };
    } catch {
      return report(i, `record ${i} is not JSON`);
    }
    if (parsed.index !== i) return report(i, `record ${i} says it is index ${String(parsed.index)}: a record is missing or out of place`);
    let canonical: string;
    try {
      canonical = canonicalJson(parsed);
    } catch {
      return report(i, `record ${i} holds a value JSON cannot represent exactly`);
    }
    if (canonical !== bytes) return report(i, `record ${i} is not in its canonical (RFC 8785) form: it was edited`);
    const hash = leafHash(bytes);
    if (leaf !== undefined && leaf !== hash.toString('base64url')) return report(i, `record ${i} does not match its stored leaf hash`);
    leaves.push(hash);
  }

  const keys = ledgerKeys(input.jwks);
  const signed: Array<{ size: number; root: Buffer }> = [];
  for (const [k, { note }] of input.checkpoints.entries()) {
    let checkpoint;
    try {
      checkpoint = parseCheckpointBody(noteBody(note));
    } catch (err) {
      return report(null, `checkpoint ${k} is malformed: ${(err as Error).message}`, signed.length);
    }
    if (checkpoint.origin !== input.origin) return report(null, `checkpoint ${k} is for ${checkpoint.origin}, not ${input.origin}`, signed.length);
    if (!keys.some((key) => openNote(note, checkpoint.origin, key) !== null)) {
      return report(null, `checkpoint ${k} (size ${checkpoint.size}) is not signed by a ledger key of the JWKS`, signed.length);
    }
    signed.push({ size: checkpoint.size, root: checkpoint.rootHash });
  }
  signed.sort((a, b) => a.size - b.size);

  let lastGood = 0;
  let previous: { size: number; root: Buffer } | null = null;
  for (const [k, c] of signed.entries()) {
    if (c.size > n) return report(n, `the checkpoint at size ${c.size} covers ${c.size - n} records that are missing: records were removed`, k, lastGood);
    if (!rootOf(leaves.slice(0, c.size)).equals(c.root)) {
      return report(lastGood < n ? lastGood : null, `the records ${lastGood}..${c.size - 1} do not match the signed checkpoint at size ${c.size}: one of them was changed`, k, lastGood);
    }
    if (previous && previous.size > 0 && !verifyConsistency(previous.size, c.size, previous.root, c.root, consistencyProof(leaves, previous.size, c.size))) {
      return report(previous.size, `the checkpoints at sizes ${previous.size} and ${c.size} are not consistent`, k, lastGood);
    }
    previous = c;
    lastGood = c.size;
  }
  return report(null, null, signed.length, lastGood);
}
