import { createPublicKey, type KeyObject } from 'node:crypto';
import { canonicalJson } from '../lib/canonical-json.js';
import { appendToFrontier, leafHash, rootFromFrontier, verifyConsistency, type Frontier } from './merkle.js';
import { openNote, parseCheckpointBody } from './note.js';

/**
 * Verifies a ledger from its records and signed checkpoints alone (the store's, or an evidence
 * bundle's), with nothing but the public ledger keys.
 * Checks, in order; the first failure names the first bad record index:
 * 1. Record i has index i, its stored bytes are the RFC 8785 form of the record they hold, and,
 *    when a leaf hash was stored, it is SHA-256(0x00 || bytes). An evidence bundle also shows
 *    each record decoded (`record`), for people to read: when it is there, it must be exactly
 *    the parse of the hashed bytes (the same RFC 8785 form), or the bundle is refused at that
 *    index. Only the bytes are hashed and signed, so a decoded copy that says anything else (a
 *    token's name, an amount) is a forgery a reader would otherwise believe.
 * 2. Every checkpoint is a signed note by a ledger key (`use: "ledger"`), for this ledger's origin.
 * 3. Every checkpoint's root equals the Merkle root recomputed over its first `size` records; a
 *    checkpoint over more records than exist means records were removed. Recomputing every
 *    checkpoint from the same records is stronger than checking consistency proofs between them:
 *    no signed history can have been rewritten. The roots come from one pass over the records
 *    (a compact range), so the check costs O(n log n) whatever the number of checkpoints.
 * 4. Every waiting record (appended, not yet integrated: no index, under no checkpoint yet) holds
 *    RFC 8785 bytes with no `index`, and its leaf hash (and decoded copy) match them, as in 1.
 * A mismatch at a checkpoint cannot say which of the records since the last good checkpoint was
 * changed; it names the first of them.
 */
export interface LedgerVerifyInput {
  origin: string;
  /**
   * In index order. `leaf`, when given, is the stored leaf hash (base64url); `record`, when the
   * member is present (a bundle's decoded copy), must be exactly the parse of `bytes`.
   */
  records: ReadonlyArray<{ bytes: string; leaf?: string; record?: unknown }>;
  checkpoints: ReadonlyArray<{ note: string }>;
  /** JWKS; only keys with `use: "ledger"` count. */
  jwks: { keys: ReadonlyArray<object> };
  /** A bundle's RFC 9162 proofs between consecutive checkpoints (base64 hashes), checked too. */
  consistency?: ReadonlyArray<{ from: number; to: number; proof: readonly string[] }>;
  /** Records appended and not yet integrated, oldest first: checked against their hashes. */
  waiting?: ReadonlyArray<{ bytes: string; leaf?: string; record?: unknown }>;
}

export interface LedgerVerifyReport {
  ok: boolean;
  origin: string;
  size: number;
  checkpoints: number;
  /** Records after the last checkpoint (not yet covered by a signature). */
  uncheckpointed: number;
  /** Records appended and not yet integrated (no index yet), each checked against its hash. */
  waiting?: number;
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

/** The text before a signed note's signatures: up to its last blank line. */
function noteBody(note: string): string {
  const end = note.lastIndexOf('\n\n');
  return end < 0 ? note : note.slice(0, end + 1);
}

/** Whether a decoded copy is exactly the record its (canonical) bytes hold. */
function decodedMatches(record: unknown, bytes: string): boolean {
  try {
    return canonicalJson(record) === bytes;
  } catch {
    return false;
  }
}

/** The first problem of the waiting records, or null: each is checked against its own hash only. */
function waitingProblem(waiting: NonNullable<LedgerVerifyInput['waiting']>): string | null {
  for (const [k, w] of waiting.entries()) {
    let parsed: { index?: unknown; id?: unknown };
    try {
      parsed = JSON.parse(w.bytes) as { index?: unknown; id?: unknown };
    } catch {
      return `waiting record ${k} is not JSON`;
    }
    const name = `waiting record ${typeof parsed.id === 'string' ? parsed.id : k}`;
    if ('index' in parsed) return `${name} says it has an index: only integrated records do`;
    if (!decodedMatches(parsed, w.bytes)) return `${name} is not in its canonical (RFC 8785) form: it was edited`;
    if (w.leaf !== undefined && w.leaf !== leafHash(w.bytes).toString('base64url'))
      return `${name} does not match its stored leaf hash`;
    if ('record' in w && !decodedMatches(w.record, w.bytes))
      return `${name}: its decoded "record" is not what its hashed bytes say: the bundle was edited (trust the bytes)`;
  }
  return null;
}

export function verifyLedger(input: LedgerVerifyInput): LedgerVerifyReport {
  const n = input.records.length;
  const report = (
    firstBadIndex: number | null,
    problem: string | null,
    checkpoints = 0,
    lastSize = 0,
  ): LedgerVerifyReport => ({
    ok: problem === null,
    origin: input.origin,
    size: n,
    checkpoints,
    uncheckpointed: n - lastSize,
    waiting: input.waiting?.length ?? 0,
    firstBadIndex,
    problem,
  });

  const badWaiting = waitingProblem(input.waiting ?? []);
  if (badWaiting) return report(null, badWaiting);
  for (let i = 0; i < n; i += 1) {
    const { bytes, leaf } = input.records[i]!;
    let parsed: { index?: unknown };
    try {
      parsed = JSON.parse(bytes) as { index?: unknown };
    } catch {
      return report(i, `record ${i} is not JSON`);
    }
    if (parsed.index !== i)
      return report(i, `record ${i} says it is index ${String(parsed.index)}: a record is missing or out of place`);
    let canonical: string;
    try {
      canonical = canonicalJson(parsed);
    } catch {
      return report(i, `record ${i} holds a value JSON cannot represent exactly`);
    }
    if (canonical !== bytes) return report(i, `record ${i} is not in its canonical (RFC 8785) form: it was edited`);
    if (leaf !== undefined && leaf !== leafHash(bytes).toString('base64url'))
      return report(i, `record ${i} does not match its stored leaf hash`);
    if ('record' in input.records[i]! && !decodedMatches(input.records[i]!.record, bytes))
      return report(
        i,
        `record ${i}: its decoded "record" is not what its hashed bytes say: the bundle was edited (trust the bytes)`,
      );
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
    if (checkpoint.origin !== input.origin)
      return report(null, `checkpoint ${k} is for ${checkpoint.origin}, not ${input.origin}`, signed.length);
    if (!keys.some((key) => openNote(note, checkpoint.origin, key) !== null)) {
      return report(
        null,
        `checkpoint ${k} (size ${checkpoint.size}) is not signed by a ledger key of the JWKS`,
        signed.length,
      );
    }
    signed.push({ size: checkpoint.size, root: checkpoint.rootHash });
  }
  signed.sort((a, b) => a.size - b.size);

  let lastGood = 0;
  let frontier: Frontier = [];
  let size = 0;
  for (const [k, c] of signed.entries()) {
    if (c.size > n)
      return report(
        n,
        `the checkpoint at size ${c.size} covers ${c.size - n} records that are missing: records were removed`,
        k,
        lastGood,
      );
    for (; size < c.size; size += 1)
      frontier = appendToFrontier(frontier, size, Buffer.from(input.records[size]!.bytes));
    if (!rootFromFrontier(frontier, size).equals(c.root)) {
      return report(
        lastGood < n ? lastGood : null,
        `the records ${lastGood}..${c.size - 1} do not match the signed checkpoint at size ${c.size}: one of them was changed`,
        k,
        lastGood,
      );
    }
    lastGood = c.size;
  }
  // A bundle's own proofs must hold between the signed roots they name.
  for (const p of input.consistency ?? []) {
    const a = signed.find((c) => c.size === p.from);
    const b = signed.find((c) => c.size === p.to);
    if (
      !a ||
      !b ||
      !verifyConsistency(
        p.from,
        p.to,
        a.root,
        b.root,
        p.proof.map((h) => Buffer.from(h, 'base64')),
      )
    ) {
      return report(
        p.from,
        `the consistency proof from size ${p.from} to ${p.to} does not verify against the signed checkpoints`,
        signed.length,
        lastGood,
      );
    }
  }
  return report(null, null, signed.length, lastGood);
}
