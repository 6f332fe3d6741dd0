import { readFileSync } from 'node:fs';
import test from 'ava';
import fc from 'fast-check';
import {
  appendToFrontier,
  consistencyProof,
  inclusionProof,
  leafHash,
  nodeHash,
  rootFromFrontier,
  rootOf,
  verifyConsistency,
  verifyInclusion,
} from '../../src/ledger/merkle.js';
import type { Frontier } from '../../src/ledger/merkle.js';

interface Vectors {
  hashes: Record<'emptyTree' | 'emptyLeaf' | 'leafL123456' | 'nodeN123N456', string>;
  leaves: string[];
  roots: string[];
  inclusion: { index: number; size: number; proof: string[] }[];
  consistency: { m: number; n: number; proof: string[] }[];
}

// Certificate Transparency's reference vectors; where they come from is in the fixture itself.
const vectors = JSON.parse(
  readFileSync(new URL('../fixtures/ledger/rfc6962-vectors.json', import.meta.url), 'utf8'),
) as Vectors;
const hex = (value: string) => Buffer.from(value, 'hex');
const LEAVES = vectors.leaves.map(hex);
const ROOTS = vectors.roots.map(hex);
const SOME_HASH = hex('abacaba000000000000000000000000000000000000000000060061e00123456');
const EMPTY_TREE = hex(vectors.hashes.emptyTree);

const flipped = (bytes: Uint8Array, at = 0, bit = 0x10): Buffer => {
  const copy = Buffer.from(bytes);
  copy[at % copy.length] = copy[at % copy.length]! ^ bit;
  return copy;
};

const frontierOf = (leaves: readonly Uint8Array[]): Frontier =>
  leaves.reduce<Frontier>((frontier, leaf, size) => appendToFrontier(frontier, size, leaf), []);

test('RFC 6962 hasher: empty tree, empty leaf, leaf and node known answers', (t) => {
  t.deepEqual(rootOf([]), EMPTY_TREE);
  t.deepEqual(leafHash(new Uint8Array()), hex(vectors.hashes.emptyLeaf));
  t.deepEqual(leafHash('L123456'), hex(vectors.hashes.leafL123456));
  t.deepEqual(leafHash(Buffer.from('L123456')), hex(vectors.hashes.leafL123456));
  t.deepEqual(nodeHash(Buffer.from('N123'), Buffer.from('N456')), hex(vectors.hashes.nodeN123N456));
});

test('reference roots for sizes 1..8, from the whole list and from the frontier', (t) => {
  let frontier: Frontier = [];
  for (let size = 1; size <= 8; size++) {
    frontier = appendToFrontier(frontier, size - 1, LEAVES[size - 1]!);
    t.deepEqual(rootOf(LEAVES.slice(0, size)), ROOTS[size - 1], `rootOf size ${size}`);
    t.deepEqual(rootFromFrontier(frontier, size), ROOTS[size - 1], `frontier size ${size}`);
    t.is(frontier.length, size.toString(2).replaceAll('0', '').length);
  }
  t.deepEqual(rootFromFrontier([], 0), EMPTY_TREE);
});

test('reference inclusion proofs: built exactly, verify, and every corruption fails', (t) => {
  for (const { index, size, proof: expectedHex } of vectors.inclusion) {
    const label = `index ${index} size ${size}`;
    const proof = inclusionProof(LEAVES, index, size);
    const root = ROOTS[size - 1]!;
    const leaf = LEAVES[index]!;
    t.deepEqual(proof, expectedHex.map(hex), label);
    t.true(verifyInclusion(index, size, leaf, root, proof), label);

    const probes: [string, number, number, Uint8Array, Uint8Array, Uint8Array[]][] = [
      ['index - 1', index - 1, size, leaf, root, proof],
      ['index + 1', index + 1, size, leaf, root, proof],
      ['index ^ 2', index ^ 2, size, leaf, root, proof],
      ['size * 2', index, size * 2, leaf, root, proof],
      ['size / 2', index, Math.floor(size / 2), leaf, root, proof],
      ['wrong leaf', index, size, Buffer.from('WrongLeaf'), root, proof],
      ['empty root', index, size, leaf, EMPTY_TREE, proof],
      ['random root', index, size, leaf, SOME_HASH, proof],
      ['trailing garbage', index, size, leaf, root, [...proof, new Uint8Array()]],
      ['trailing root', index, size, leaf, root, [...proof, root]],
      ['preceding garbage', index, size, leaf, root, [new Uint8Array(), ...proof]],
      ['preceding root', index, size, leaf, root, [root, ...proof]],
      ...proof.map((_, i): [string, number, number, Uint8Array, Uint8Array, Uint8Array[]] => [
        `flipped proof[${i}]`,
        index,
        size,
        leaf,
        root,
        proof.map((p, j) => (j === i ? flipped(p, 0, 8) : p)),
      ]),
    ];
    if (proof.length > 0) probes.push(['removed component', index, size, leaf, root, proof.slice(0, -1)]);
    if (proof.length > 1)
      probes.push(['inserted component', index, size, leaf, root, [proof[0]!, SOME_HASH, ...proof.slice(1)]]);
    for (const [name, i, n, l, r, p] of probes) t.false(verifyInclusion(i, n, l, r, p), `${label}: ${name}`);
  }
});

test('reference consistency proofs: built exactly, verify, and every corruption fails', (t) => {
  for (const { m, n, proof: expectedHex } of vectors.consistency) {
    const label = `m ${m} n ${n}`;
    const proof = consistencyProof(LEAVES, m, n);
    const rootM = ROOTS[m - 1]!;
    const rootN = ROOTS[n - 1]!;
    t.deepEqual(proof, expectedHex.map(hex), label);
    t.true(verifyConsistency(m, n, rootM, rootN, proof), label);
    if (proof.length === 0) continue;

    const probes: [string, number, number, Uint8Array, Uint8Array, Uint8Array[]][] = [
      ['m - 1', m - 1, n, rootM, rootN, proof],
      ['m + 1', m + 1, n, rootM, rootN, proof],
      ['m ^ 2', m ^ 2, n, rootM, rootN, proof],
      ['n * 2', m, n * 2, rootM, rootN, proof],
      ['n / 2', m, Math.floor(n / 2), rootM, rootN, proof],
      ['wrong rootM', m, n, Buffer.from('WrongRoot'), rootN, proof],
      ['wrong rootN', m, n, rootM, Buffer.from('WrongRoot'), proof],
      ['flipped rootM', m, n, flipped(rootM), rootN, proof],
      ['flipped rootN', m, n, rootM, flipped(rootN), proof],
      ['swapped roots', m, n, rootN, rootM, proof],
      ['empty proof', m, n, rootM, rootN, []],
      ['trailing garbage', m, n, rootM, rootN, [...proof, new Uint8Array()]],
      ['trailing rootM', m, n, rootM, rootN, [...proof, rootM]],
      ['trailing rootN', m, n, rootM, rootN, [...proof, rootN]],
      ['preceding garbage', m, n, rootM, rootN, [new Uint8Array(), ...proof]],
      ['preceding rootM', m, n, rootM, rootN, [rootM, ...proof]],
      ['preceding rootN', m, n, rootM, rootN, [rootN, ...proof]],
      ['preceding proof[0]', m, n, rootM, rootN, [proof[0]!, ...proof]],
      ['truncated proof', m, n, rootM, rootN, proof.slice(0, -1)],
      ...proof.map((_, i): [string, number, number, Uint8Array, Uint8Array, Uint8Array[]] => [
        `flipped proof[${i}]`,
        m,
        n,
        rootM,
        rootN,
        proof.map((p, j) => (j === i ? flipped(p) : p)),
      ]),
    ];
    for (const [name, a, b, ra, rb, p] of probes) t.false(verifyConsistency(a, b, ra, rb, p), `${label}: ${name}`);
  }
});

test('verifyConsistency: equal sizes need an empty proof and equal roots; bad input is false, never a throw', (t) => {
  t.true(verifyConsistency(3, 3, ROOTS[2]!, ROOTS[2]!, []));
  t.false(verifyConsistency(3, 3, ROOTS[2]!, ROOTS[3]!, []));
  t.false(verifyConsistency(3, 3, ROOTS[2]!, ROOTS[2]!, [EMPTY_TREE]));
  t.false(verifyConsistency(0, 0, EMPTY_TREE, EMPTY_TREE, []), 'm must be positive');
  t.false(verifyConsistency(0, 1, EMPTY_TREE, ROOTS[0]!, []), 'm must be positive');
  t.false(verifyConsistency(2, 1, ROOTS[1]!, ROOTS[0]!, []), 'no time travel');
  t.false(verifyConsistency(1.5, 2, ROOTS[0]!, ROOTS[1]!, []));
  t.false(verifyConsistency(1, 2 ** 60, ROOTS[0]!, ROOTS[1]!, [SOME_HASH]));
  const garbage = [null, undefined, 'x', {}, [1], [null]] as never[];
  for (const junk of garbage) {
    t.false(verifyConsistency(1, 2, ROOTS[0]!, ROOTS[1]!, junk));
    t.false(verifyConsistency(1, 2, junk, ROOTS[1]!, [LEAVES[1]!]));
    t.false(verifyInclusion(0, 2, LEAVES[0]!, ROOTS[1]!, junk));
    t.false(verifyInclusion(0, 2, junk, ROOTS[1]!, [leafHash(LEAVES[1]!)]));
    t.false(verifyInclusion(junk, 2, LEAVES[0]!, ROOTS[1]!, [leafHash(LEAVES[1]!)]));
  }
  t.true(verifyInclusion(0, 2, LEAVES[0]!, ROOTS[1]!, [leafHash(LEAVES[1]!)]));
});

test('proof builders refuse sizes and indexes the RFC does not define', (t) => {
  for (const [m, n] of [
    [0, 3],
    [4, 3],
    [1, 9],
    [-1, 3],
    [1.5, 3],
  ] as const) {
    t.throws(() => consistencyProof(LEAVES, m, n), { instanceOf: RangeError }, `m ${m} n ${n}`);
  }
  for (const [index, n] of [
    [3, 3],
    [-1, 3],
    [0, 0],
    [0, 9],
    [0.5, 3],
  ] as const) {
    t.throws(() => inclusionProof(LEAVES, index, n), { instanceOf: RangeError }, `index ${index} n ${n}`);
  }
  t.deepEqual(consistencyProof(LEAVES, 8), []);
  t.deepEqual(inclusionProof(LEAVES, 7), inclusionProof(LEAVES, 7, 8));
});

test('frontier: the input is not mutated, and a malformed frontier is refused', (t) => {
  const frontier = frontierOf(LEAVES.slice(0, 3));
  const copy = [...frontier];
  const next = appendToFrontier(frontier, 3, LEAVES[3]!);
  t.deepEqual(frontier, copy);
  t.is(next.length, 1);
  t.throws(
    () => appendToFrontier(frontier, 4, LEAVES[3]!),
    { instanceOf: RangeError },
    'size does not match the node count',
  );
  t.throws(() => rootFromFrontier([], 1), { instanceOf: RangeError });
  t.throws(() => rootFromFrontier([frontier[0]!.slice(1)], 2), { instanceOf: RangeError }, 'short node');
  t.throws(
    () => rootFromFrontier([Buffer.alloc(32).toString('base64')], 1),
    { instanceOf: RangeError },
    'padded base64 is not base64url',
  );
  t.throws(
    () => rootFromFrontier([`${'A'.repeat(42)}B`], 1),
    { instanceOf: RangeError },
    'non-canonical last character',
  );
  t.throws(
    () => appendToFrontier([`${'A'.repeat(42)}B`], 1, LEAVES[1]!),
    { instanceOf: RangeError },
    'non-canonical last character',
  );
  t.notThrows(() => rootFromFrontier([`${'A'.repeat(42)}A`], 1));
  t.throws(() => rootFromFrontier(frontier, -1), { instanceOf: RangeError });
});

test('rootOf handles 100,000 leaves in linear time and splits at the largest power of two', (t) => {
  const leaves = Array.from({ length: 100_000 }, (_, i) => Buffer.from(`entry ${i}`));
  const started = performance.now();
  const root = rootOf(leaves);
  const elapsed = performance.now() - started;
  // About 200,000 SHA-256 calls; the bound is loose so a busy machine does not fail it, yet a
  // quadratic implementation would blow through it.
  t.true(elapsed < 10_000, `took ${Math.round(elapsed)} ms`);
  // MTH(D[n]) = HASH(0x01 || MTH(D[0:k]) || MTH(D[k:n])) with k = 65536, the RFC's definition.
  t.deepEqual(root, nodeHash(rootOf(leaves.slice(0, 65_536)), rootOf(leaves.slice(65_536))));
});

const leafList = (minLength: number) => fc.array(fc.uint8Array({ maxLength: 12 }), { minLength, maxLength: 70 });

test('property: the frontier root equals rootOf at every size', (t) => {
  t.notThrows(() =>
    fc.assert(
      fc.property(leafList(0), (leaves) => {
        let frontier: Frontier = [];
        for (let size = 0; size <= leaves.length; size++) {
          if (!rootFromFrontier(frontier, size).equals(rootOf(leaves.slice(0, size)))) return false;
          if (size < leaves.length) frontier = appendToFrontier(frontier, size, leaves[size]!);
        }
        return true;
      }),
      { numRuns: 100 },
    ),
  );
});

/** A leaf list with a pair 0 < m <= n <= length and a position to corrupt. */
const consistencyCase = leafList(1)
  .chain((leaves) =>
    fc.record({
      leaves: fc.constant(leaves),
      n: fc.integer({ min: 1, max: leaves.length }),
      mSeed: fc.nat(),
      at: fc.nat(),
    }),
  )
  .map(({ leaves, n, mSeed, at }) => ({ leaves, n, m: 1 + (mSeed % n), at }));

test('property: consistency proofs verify, and a flipped byte or a wrong root fails', (t) => {
  t.notThrows(() =>
    fc.assert(
      fc.property(consistencyCase, ({ leaves, m, n, at }) => {
        const proof = consistencyProof(leaves, m, n);
        const rootM = rootOf(leaves.slice(0, m));
        const rootN = rootOf(leaves.slice(0, n));
        if (!verifyConsistency(m, n, rootM, rootN, proof)) return false;
        if (verifyConsistency(m, n, flipped(rootM, at, 1), rootN, proof)) return false;
        if (verifyConsistency(m, n, rootM, flipped(rootN, at, 1), proof)) return false;
        if (proof.length === 0) return m === n;
        const i = at % proof.length;
        const bad = proof.map((p, j) => (j === i ? flipped(p, Math.floor(at / proof.length), 1) : p));
        return !verifyConsistency(m, n, rootM, rootN, bad) && !verifyConsistency(m, n, rootM, rootN, proof.slice(1));
      }),
      { numRuns: 300 },
    ),
  );
});

test('property: a consistency proof convinces a verifier holding the true roots of other sizes only if it is their proof', (t) => {
  // With honest roots for (m2, n2), the only accepted proof is PROOF(m2, n2) itself, so a proof
  // for other sizes fails unless both happen to be the same list (for example both empty).
  const sizes = (length: number) =>
    fc.integer({ min: 1, max: length }).chain((n) => fc.tuple(fc.integer({ min: 1, max: n }), fc.constant(n)));
  const arbitrary = leafList(1).chain((leaves) =>
    fc.tuple(fc.constant(leaves), sizes(leaves.length), sizes(leaves.length)),
  );
  t.notThrows(() =>
    fc.assert(
      fc.property(arbitrary, ([leaves, [m, n], [m2, n2]]) => {
        const proof = consistencyProof(leaves, m, n);
        const accepted = verifyConsistency(m2, n2, rootOf(leaves.slice(0, m2)), rootOf(leaves.slice(0, n2)), proof);
        const same = consistencyProof(leaves, m2, n2);
        return accepted === (same.length === proof.length && same.every((p, i) => p.equals(proof[i]!)));
      }),
      { numRuns: 300 },
    ),
  );
});

test('property: inclusion proofs verify for every index and fail for a different leaf or a flipped byte', (t) => {
  const arbitrary = leafList(1).chain((leaves) =>
    fc.tuple(
      fc.constant(leaves),
      fc.integer({ min: 1, max: leaves.length }),
      fc.uint8Array({ maxLength: 12 }),
      fc.nat(),
    ),
  );
  t.notThrows(() =>
    fc.assert(
      fc.property(arbitrary, ([leaves, n, other, at]) => {
        const root = rootOf(leaves.slice(0, n));
        for (let index = 0; index < n; index++) {
          const proof = inclusionProof(leaves, index, n);
          const leaf = leaves[index]!;
          if (!verifyInclusion(index, n, leaf, root, proof)) return false;
          if (!Buffer.from(other).equals(leaf) && verifyInclusion(index, n, other, root, proof)) return false;
          if (verifyInclusion(index, n, leaf, flipped(root, at, 1), proof)) return false;
          if (proof.length > 0) {
            const i = at % proof.length;
            if (
              verifyInclusion(
                index,
                n,
                leaf,
                root,
                proof.map((p, j) => (j === i ? flipped(p, at, 1) : p)),
              )
            )
              return false;
          }
        }
        return true;
      }),
      { numRuns: 100 },
    ),
  );
});
