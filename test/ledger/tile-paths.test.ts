import { generateKeyPairSync } from 'node:crypto';
import test from 'ava';
import fc from 'fast-check';
import { inclusionProof, leafHash } from '../../src/ledger/merkle.js';
import { allInclusionProofs } from '../../src/ledger/proofs.js';
import { verifierKey } from '../../src/ledger/note.js';
import { parseVerifierKey } from '../../src/cli/ledger-remote.js';
import { encodeTileIndex, parseTilePath, tilePath } from '../../src/ledger/tiles.js';

/**
 * The C2SP tlog-tiles path form the ledger's tile routes read (tiles.ts): x-prefixed 3-digit
 * groups, partial widths 1 to 255, one spelling per tile; and the all-at-once inclusion proofs
 * the evidence bundle carries (proofs.ts), which must equal RFC 9162's one-at-a-time ones.
 */
test('known paths', (t) => {
  t.is(encodeTileIndex(0), '000');
  t.is(encodeTileIndex(1234067), 'x001/x234/067');
  t.deepEqual(parseTilePath('0/x001/x234/067'), { level: 0, index: 1234067 });
  t.deepEqual(parseTilePath('entries/001.p/44'), { level: 'entries', index: 1, width: 44 });
  t.deepEqual(parseTilePath('1/000.p/1'), { level: 1, index: 0, width: 1 });
  for (const bad of [
    '',
    '0',
    '0/',
    '0/1',
    '0/0000',
    '0/x000/001',
    '0/001/002',
    '0/001.p/0',
    '0/001.p/256',
    '0/001.p/01',
    '01/000',
    'data/000',
    '0/x1/000',
    '0/000.p',
    '0/000.p/',
  ]) {
    t.is(parseTilePath(bad), null, bad);
  }
});

test('every path parses back to the tile it names, and nothing else parses', (t) => {
  const ref = fc.record({
    level: fc.oneof(fc.integer({ min: 0, max: 5 }), fc.constant('entries' as const)),
    index: fc.integer({ min: 0, max: 2 ** 40 }),
    width: fc.option(fc.integer({ min: 1, max: 255 }), { nil: undefined }),
  });
  fc.assert(
    fc.property(ref, (r) => {
      const clean = { level: r.level, index: r.index, ...(r.width === undefined ? {} : { width: r.width }) };
      t.deepEqual(parseTilePath(tilePath(clean)), clean);
    }),
  );
  fc.assert(
    fc.property(fc.string({ maxLength: 30 }), (s) => {
      const parsed = parseTilePath(s);
      if (parsed) t.is(tilePath(parsed), s);
    }),
  );
});

test('all inclusion proofs at once equal RFC 9162 PATH for each leaf', (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 70 }), (n) => {
      const leaves = Array.from({ length: n }, (_, i) => Buffer.from(`entry ${i}`));
      const all = allInclusionProofs(leaves.map((l) => leafHash(l)));
      for (let i = 0; i < n; i++) t.deepEqual(all[i], inclusionProof(leaves, i));
    }),
    { numRuns: 30 },
  );
});

test('svc ledger verify --key reads every verifier key svc ledger key prints, "+" in its base64 too', (t) => {
  for (let i = 0; i < 64; i++) {
    const { publicKey } = generateKeyPairSync('ed25519');
    const text = verifierKey('svc.example.com/ws_1', publicKey);
    const parsed = parseVerifierKey(text);
    t.is(parsed.name, 'svc.example.com/ws_1');
    t.is(verifierKey(parsed.name, parsed.publicKey), text);
  }
  t.throws(() => parseVerifierKey('svc.example.com/ws_1+00000000+AAAA'));
});
