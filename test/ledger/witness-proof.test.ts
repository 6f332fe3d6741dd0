import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import fc from 'fast-check';
import {
  cosignaturesIn,
  cosignerVerifierKey,
  noteBody,
  openCosignature,
  parseCosignerKey,
} from '../../src/ledger/cosignature.js';
import { consistencyProof, leafHash, nodeHash, verifyConsistency } from '../../src/ledger/merkle.js';
import type { TileRef } from '../../src/ledger/tiles.js';
import { loadSettings, SettingsError } from '../../src/settings/load.js';
import { addCheckpointBody } from '../../src/ledger/witness.js';
import { consistencyProofFromTiles, type TileSource } from '../../src/ledger/witness-proof.js';

/**
 * What the witness submitter (src/ledger/witness.ts) is made of: the consistency proof it reads
 * from the tiles equals RFC 9162's PROOF(m, n) computed from every leaf (merkle.ts), for any sizes,
 * across tile and level boundaries; the add-checkpoint body's form; and cosignature lines
 * (C2SP tlog-cosignature, Ed25519): read when made by the key, refused otherwise, never a throw.
 */

const leaves = (n: number, salt = 0) => Array.from({ length: n }, (_, i) => Buffer.from(`entry ${salt} ${i}`));

/** Tiles as tiles.ts serves them (height 8), for a log of these leaves. */
function tilesOf(entries: readonly Buffer[]): TileSource {
  const levels: Buffer[][] = [entries.map((e) => leafHash(e))];
  while (levels[levels.length - 1]!.length >= 256) {
    const below = levels[levels.length - 1]!;
    const up: Buffer[] = [];
    for (let i = 0; i + 256 <= below.length; i += 256) {
      let row = below.slice(i, i + 256);
      while (row.length > 1) row = row.flatMap((h, j) => (j % 2 === 0 ? [nodeHash(h, row[j + 1]!)] : []));
      up.push(row[0]!);
    }
    levels.push(up);
  }
  return {
    tile: async (_wid: string, ref: TileRef) => {
      if (ref.level === 'entries') return null;
      const width = ref.width ?? 256;
      const hashes = levels[ref.level]?.slice(ref.index * 256, ref.index * 256 + width) ?? [];
      return hashes.length === width ? Buffer.concat(hashes) : null;
    },
  };
}

test('the proof read from the tiles is PROOF(m, n) of RFC 9162, for any sizes', async (t) => {
  const all = leaves(800);
  const tiles = tilesOf(all);
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 800 }).chain((n) => fc.tuple(fc.integer({ min: 1, max: n }), fc.constant(n))),
      async ([m, n]) => {
        const fromTiles = await consistencyProofFromTiles(tiles, 'ws', m, n);
        const fromLeaves = consistencyProof(all, m, n);
        return fromTiles.length === fromLeaves.length && fromTiles.every((h, i) => h.equals(fromLeaves[i]!));
      },
    ),
    { numRuns: 200 },
  );
  t.deepEqual(await consistencyProofFromTiles(tiles, 'ws', 0, 700), []);
  t.deepEqual(await consistencyProofFromTiles(tiles, 'ws', 700, 700), []);
  await t.throwsAsync(consistencyProofFromTiles(tiles, 'ws', 5, 4), { instanceOf: RangeError });
});

test('past 65,536 leaves the proof uses level-1 tiles, and still verifies', async (t) => {
  const all = leaves(70_000, 1);
  const tiles = tilesOf(all);
  const hashes = all.map((e) => leafHash(e));
  /** MTH of the first n leaves, level by level (an odd last node is carried up). */
  const root = (n: number) => {
    let level = hashes.slice(0, n);
    while (level.length > 1) {
      const up: Buffer[] = [];
      for (let i = 0; i + 1 < level.length; i += 2) up.push(nodeHash(level[i]!, level[i + 1]!));
      if (level.length % 2 === 1) up.push(level[level.length - 1]!);
      level = up;
    }
    return level[0]!;
  };
  for (const [m, n] of [
    [65_536, 70_000],
    [1000, 69_999],
    [65_537, 65_800],
    [3, 66_000],
  ] as const) {
    const proof = await consistencyProofFromTiles(tiles, 'ws', m, n);
    t.true(verifyConsistency(m, n, root(m), root(n), proof), `${m} -> ${n}`);
  }
});

test('the add-checkpoint body is the old size, one proof hash a line, a blank line and the checkpoint', (t) => {
  const proof = [Buffer.alloc(32, 1), Buffer.alloc(32, 2)];
  const note = 'example.com/log\n5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n\u2014 example.com/log abc=\n';
  t.is(
    addCheckpointBody(3, proof, note),
    `old 3\n${proof[0]!.toString('base64')}\n${proof[1]!.toString('base64')}\n\n${note}`,
  );
  t.is(addCheckpointBody(0, [], note), `old 0\n\n${note}`);
});

/** A cosignature line made from the spec's text, not with src/ledger/cosignature.ts. */
function cosignLine(name: string, privateKey: Parameters<typeof sign>[2], raw: Buffer, body: string, time: number) {
  const keyId = createHash('sha256')
    .update(Buffer.concat([Buffer.from(`${name}\n`), Buffer.from([0x04]), raw]))
    .digest()
    .subarray(0, 4);
  const stamp = Buffer.alloc(8);
  stamp.writeBigUInt64BE(BigInt(time));
  const signature = sign(null, Buffer.from(`cosignature/v1\ntime ${time}\n${body}`), privateKey);
  return `\u2014 ${name} ${Buffer.concat([keyId, stamp, signature]).toString('base64')}`;
}

test('a cosignature line is read when made by the key over this checkpoint, and refused otherwise', (t) => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
  const vkey = cosignerVerifierKey('witness.example/w1', publicKey);
  t.regex(vkey, /^witness\.example\/w1\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}$/);
  const key = parseCosignerKey(vkey);
  const body = 'example.com/log\n5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n';
  const line = cosignLine('witness.example/w1', privateKey, raw, body, 1_700_000_000);
  t.deepEqual(openCosignature(line, body, key), { witness: 'witness.example/w1', timestamp: 1_700_000_000, line });
  // Over another checkpoint, by another name, or with another key: not this witness's cosignature.
  t.is(openCosignature(line, body.replace('\n5\n', '\n6\n'), key), null);
  t.is(openCosignature(line.replace('witness.example/w1', 'witness.example/w2'), body, key), null);
  const other = generateKeyPairSync('ed25519');
  const otherRaw = Buffer.from(other.publicKey.export({ format: 'jwk' }).x!, 'base64url');
  t.is(openCosignature(cosignLine('witness.example/w1', other.privateKey, otherRaw, body, 1), body, key), null);
  // A served note: the log's line is ignored, the witness's is found.
  const note = `${body}\n\u2014 example.com/log AAAA\n${line}\n`;
  t.is(noteBody(note), body);
  t.is(cosignaturesIn(note, body, key).length, 1);
  // A signed-note key (type 0x01) is not a cosigner key.
  const noteKey = vkey.replace(/\+[A-Za-z0-9+/]{44}$/, `+${Buffer.concat([Buffer.from([1]), raw]).toString('base64')}`);
  t.throws(() => parseCosignerKey(noteKey), { message: /cosignature\/v1 Ed25519 key/ });
  t.throws(() => parseCosignerKey(vkey.replace(/\+[0-9a-f]{8}\+/, '+00000000+')), { message: /key id/ });
  // Any text at all: an answer, never a throw.
  fc.assert(
    fc.property(fc.string({ unit: 'binary' }), (text) => {
      t.is(openCosignature(text, body, key), null);
      t.is(openCosignature(`\u2014 witness.example/w1 ${text}`, body, key), null);
      return true;
    }),
  );
});

test('ledger.witnesses takes cosignature keys whose key id matches, one per witness name, and names what is wrong otherwise', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-witness-settings-'));
  const load = async (witnesses: unknown) => {
    const file = join(dir, 'config.json');
    await writeFile(file, JSON.stringify({ ledger: { witnesses } }));
    return loadSettings({ configFile: file, env: {} });
  };
  try {
    const key = (name: string) => cosignerVerifierKey(name, generateKeyPairSync('ed25519').publicKey);
    const good = [
      { url: 'https://w1.example/submit', publicKey: key('w1.example/a') },
      { url: 'http://127.0.0.1:9000', publicKey: key('w2.example/b') },
    ];
    t.deepEqual((await load(good)).ledger.witnesses, good);
    t.deepEqual((await load([])).ledger.witnesses, []);
    const refused = async (witnesses: unknown, message: RegExp) => {
      const err = await t.throwsAsync(load(witnesses), { instanceOf: SettingsError });
      t.regex(err!.message, message);
    };
    const w1 = key('w1.example/a');
    await refused(
      [{ url: 'https://w1.example', publicKey: w1.replace(/\+[0-9a-f]{8}\+/, '+00000000+') }],
      /ledger\.witnesses\[0\]\.publicKey.*key id/,
    );
    const asNoteKey = w1.replace(/\+B/, '+A');
    await refused([{ url: 'https://w1.example', publicKey: asNoteKey }], /ledger\.witnesses\[0\]\.publicKey/);
    await refused([{ url: 'ftp://w1.example', publicKey: w1 }], /ledger\.witnesses\[0\]\.url/);
    await refused(
      [
        { url: 'https://w1.example', publicKey: w1 },
        { url: 'https://w1-again.example', publicKey: key('w1.example/a') },
      ],
      /ledger\.witnesses\[1\].*duplicate/,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
