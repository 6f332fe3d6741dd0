import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import test from 'ava';
import fc from 'fast-check';
import {
  checkpointBody,
  noteKeyId,
  openNote,
  parseCheckpointBody,
  signNote,
  verifierKey,
} from '../../src/ledger/note.js';
import type { Checkpoint } from '../../src/ledger/note.js';

interface NoteVectors {
  peter: { name: string; signerKey: string; verifierKey: string; signatureLine: string };
  enoch: { name: string; verifierKey: string; signatureLine: string };
  text: string;
}

// golang.org/x/mod/sumdb/note's own test vectors; where they come from is in the fixture itself.
const vectors = JSON.parse(
  readFileSync(new URL('../fixtures/ledger/sumdb-note-vectors.json', import.meta.url), 'utf8'),
) as NoteVectors;
const { peter, enoch, text } = vectors;

// PKCS#8 DER for an Ed25519 private key is this fixed prefix followed by the 32-byte seed.
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const privateKeyFromSeed = (seed: Uint8Array): KeyObject =>
  createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });

/** The key field of a Go key string, base64(0x01 || 32 bytes), follows `fieldsBefore` '+'-separated fields (base64 may hold '+' itself). */
const keyBytes = (encoded: string, fieldsBefore: number): Buffer => {
  const bytes = Buffer.from(encoded.split('+').slice(fieldsBefore).join('+'), 'base64');
  if (bytes.length !== 33 || bytes[0] !== 0x01) throw new Error(`not an Ed25519 key: ${encoded}`);
  return bytes.subarray(1);
};
const publicKeyFromVerifierKey = (vkey: string): KeyObject =>
  createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: keyBytes(vkey, 2).toString('base64url') }, format: 'jwk' });

const peterPrivate = privateKeyFromSeed(keyBytes(peter.signerKey, 4));
const peterPublic = createPublicKey(peterPrivate);
const enochPublic = publicKeyFromVerifierKey(enoch.verifierKey);
const peterNote = `${text}\n${peter.signatureLine}`;

test('sumdb vectors: key id and verifier key of PeterNeumann', (t) => {
  t.is(verifierKey(peter.name, peterPublic), peter.verifierKey);
  t.is(verifierKey(peter.name, peterPrivate), peter.verifierKey, 'a private key stands for its public half');
  t.is(noteKeyId(peter.name, peterPublic).toString('hex'), 'c74f20a3');
  t.is(noteKeyId(enoch.name, enochPublic).toString('hex'), 'af0cfe78');
  t.is(verifierKey(enoch.name, enochPublic), enoch.verifierKey);
});

test('sumdb vectors: signNote reproduces the signed note byte for byte', (t) => {
  t.is(signNote(text, peter.name, peterPrivate), peterNote);
});

test('sumdb vectors: openNote accepts the note by each known key and ignores the other signature', (t) => {
  const both = `${text}\n${peter.signatureLine}${enoch.signatureLine}`;
  t.deepEqual(openNote(both, peter.name, peterPublic), { body: text });
  t.deepEqual(openNote(both, enoch.name, enochPublic), { body: text });
  t.deepEqual(openNote(peterNote, peter.name, peterPublic), { body: text });
  t.is(openNote(peterNote, enoch.name, enochPublic), null, 'no line by this key');
  t.deepEqual(
    openNote(`${text}\n${peter.signatureLine}${peter.signatureLine}`, peter.name, peterPublic),
    { body: text },
    'a repeated valid line',
  );
});

test('sumdb vectors: malformed notes and bad signatures give null', (t) => {
  const sig = peter.signatureLine;
  const garbled = `${sig.slice(0, 58)}ABCD${sig.slice(58)}`;
  const bad: [string, string][] = [
    ['text only', text],
    ['text and blank line', `${text}\n`],
    ['signature line without newline', `${text}\n${sig.slice(0, -1)}`],
    ['leading control character', `\u0001${text}\n${sig}`],
    ['lone surrogate', `\ud800${text}\n${sig}`],
    ['name with a space', `${text}\n\u2014 Bad Name ${sig.split(' ')[2]}`],
    ['unexpected line after the signature', `${text}\n${sig}Unexpected line.\n`],
    ['garbled signature', `${text}\n${garbled}`],
    ['valid and invalid line by the same key', `${text}\n${sig}${garbled}`],
    ['hyphen instead of em dash', `${text}\n-${sig.slice(1)}`],
    ['unpadded base64', `${text}\n${sig.replace('=\n', '\n')}`],
    ['101 signatures', `${text}\n${sig.repeat(101)}`],
    ['changed body', `${text.replace('answer', 'Answer')}\n${sig}`],
    ['misnamed signature', `${text}\n${sig.replace(peter.name, 'CarmenSandiego')}`],
  ];
  for (const [name, note] of bad) t.is(openNote(note, peter.name, peterPublic), null, name);
  t.is(openNote(peterNote, 'CarmenSandiego', peterPublic), null, 'wrong key name');
  t.is(openNote(peterNote, peter.name, enochPublic), null, 'different key under the same name');
  t.is(openNote(peterNote, 'bad name', peterPublic), null, 'an invalid key name matches nothing');
});

test('key names: empty, spaces and plus are refused by signNote and verifierKey', (t) => {
  for (const name of ['', 'a b', 'a+b', 'a\tb', 'a\nb', 'a\u00a0b', 'a\u2003b', 'a\u0085b', 'a\u0001b']) {
    t.throws(() => signNote(text, name, peterPrivate), { instanceOf: Error }, JSON.stringify(name));
    t.throws(() => verifierKey(name, peterPublic), { instanceOf: Error }, JSON.stringify(name));
  }
  t.notThrows(() => verifierKey('example.com/log-1', peterPublic));
});

test('signNote refuses bodies that are not note text, and keys that are not Ed25519 private keys', (t) => {
  for (const body of ['no newline', 'tab\there\n', 'cr\r\n', 'lone \ud800\n']) {
    t.throws(() => signNote(body, peter.name, peterPrivate), { instanceOf: Error }, JSON.stringify(body));
  }
  t.throws(() => signNote(text, peter.name, peterPublic), { instanceOf: TypeError });
  const x25519 = generateKeyPairSync('x25519');
  t.throws(() => signNote(text, peter.name, x25519.privateKey), { instanceOf: TypeError });
  t.throws(() => openNote(peterNote, peter.name, x25519.publicKey), { instanceOf: TypeError });
});

// The root hash of the example checkpoint in the C2SP tlog-checkpoint spec.
const ROOT = Buffer.from('CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=', 'base64');

test('checkpoint: the C2SP example body parses, extension lines are ignored, and it round-trips', (t) => {
  const body = 'example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n';
  const parsed = parseCheckpointBody(body);
  t.deepEqual(parsed, { origin: 'example.com/behind-the-sofa', size: 20852163, rootHash: ROOT });
  t.is(checkpointBody(parsed), body);
  t.deepEqual(parseCheckpointBody(`${body}ext one\next two\n`), parsed);
  t.is(checkpointBody({ origin: 'o', size: 0, rootHash: Buffer.alloc(32) }), `o\n0\n${'A'.repeat(43)}=\n`);
});

test('checkpoint: malformed bodies throw an Error saying what is wrong', (t) => {
  const root = ROOT.toString('base64');
  const bad: [string, RegExp][] = [
    ['', /newline/],
    ['origin\n1\n', /lines/],
    ['origin\n', /lines/],
    [`origin\n1\n${root}`, /newline/],
    [`\n1\n${root}\n`, /line 1 is empty/],
    [`origin\n1\n${root}\n\next\n`, /line 4 is empty/],
    [`origin\n01\n${root}\n`, /leading zeros/],
    [`origin\n00\n${root}\n`, /leading zeros/],
    [`origin\n-1\n${root}\n`, /size/],
    [`origin\n+1\n${root}\n`, /size/],
    [`origin\n 1\n${root}\n`, /size/],
    [`origin\n1.0\n${root}\n`, /size/],
    [`origin\n1e3\n${root}\n`, /size/],
    [`origin\n0x10\n${root}\n`, /size/],
    [`origin\n9007199254740993\n${root}\n`, /larger/],
    [`origin\n1\n${ROOT.subarray(1).toString('base64')}\n`, /root hash/],
    [`origin\n1\n${Buffer.concat([ROOT, Buffer.from([0])]).toString('base64')}\n`, /root hash/],
    [`origin\n1\n${root.replace('=', '')}\n`, /root hash/],
    [`origin\n1\n${ROOT.toString('base64url')}=\n`, /root hash/],
    [`origin\n1\n${root.slice(0, -2)}3=\n`, /root hash/],
    [`ori\tgin\n1\n${root}\n`, /control/],
  ];
  for (const [body, message] of bad)
    t.throws(() => parseCheckpointBody(body), { instanceOf: Error, message }, JSON.stringify(body));
  t.throws(() => checkpointBody({ origin: '', size: 1, rootHash: ROOT }), { instanceOf: Error });
  t.throws(() => checkpointBody({ origin: 'a\nb', size: 1, rootHash: ROOT }), { instanceOf: Error });
  t.throws(() => checkpointBody({ origin: 'o', size: -1, rootHash: ROOT }), { instanceOf: Error });
  t.throws(() => checkpointBody({ origin: 'o', size: 1.5, rootHash: ROOT }), { instanceOf: Error });
  t.throws(() => checkpointBody({ origin: 'o', size: 1, rootHash: ROOT.subarray(1) }), { instanceOf: Error });
});

// Arbitraries: note text drawn from printable ASCII, a few multi-byte characters, '+', '—' and
// newlines; key names from the URL-ish characters the spec recommends.
const noteChar = fc.oneof(
  fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)),
  fc.constantFrom('\n', '\u2014', '\u00e9', '\u20ac', '\ud83d\ude02', '+'),
);
const noteBody = fc.string({ unit: noteChar, maxLength: 200 }).map((s) => `${s}\n`);
const keyName = fc.stringMatching(/^[A-Za-z0-9./_-]{1,24}$/);
const seed = fc.uint8Array({ minLength: 32, maxLength: 32 });

test('property: a signed note opens to its body, and a changed body, another key or another name gives null', (t) => {
  t.notThrows(() =>
    fc.assert(
      fc.property(noteBody, keyName, seed, seed, fc.nat(), (body, name, seedA, seedB, at) => {
        const key = privateKeyFromSeed(seedA);
        const publicKey = createPublicKey(key);
        const note = signNote(body, name, key);
        const opened = openNote(note, name, publicKey);
        if (opened?.body !== body) return false;
        const i = at % body.length;
        const changed = `${body.slice(0, i)}${body[i] === 'x' ? 'y' : 'x'}${body.slice(i + 1)}`;
        if (openNote(`${changed}${note.slice(body.length)}`, name, publicKey) !== null) return false;
        if (openNote(note, `${name}x`, publicKey) !== null) return false;
        const other = createPublicKey(privateKeyFromSeed(seedB));
        return Buffer.from(seedA).equals(seedB) || openNote(note, name, other) === null;
      }),
      { numRuns: 150 },
    ),
  );
});

test('property: a truncated or garbled signature line gives null', (t) => {
  const base64Char = fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=');
  t.notThrows(() =>
    fc.assert(
      fc.property(noteBody, keyName, seed, fc.nat(), base64Char, (body, name, s, at, replacement) => {
        const key = privateKeyFromSeed(s);
        const publicKey = createPublicKey(key);
        const note = signNote(body, name, key);
        const lineStart = body.length + 1;
        const cut = lineStart + (at % (note.length - lineStart));
        if (openNote(note.slice(0, cut), name, publicKey) !== null) return false;
        const sigStart = note.lastIndexOf(' ') + 1;
        const j = sigStart + (at % (note.length - 1 - sigStart));
        if (note[j] === replacement) return true;
        return openNote(`${note.slice(0, j)}${replacement}${note.slice(j + 1)}`, name, publicKey) === null;
      }),
      { numRuns: 200 },
    ),
  );
});

test('property: checkpoint bodies round-trip, with or without extension lines', (t) => {
  const origin = fc.string({ unit: noteChar, minLength: 1, maxLength: 40 }).filter((s) => !s.includes('\n'));
  const extensions = fc.array(
    fc.string({ unit: noteChar, minLength: 1, maxLength: 20 }).filter((s) => !s.includes('\n')),
    { maxLength: 3 },
  );
  const checkpoint = fc.record({
    origin,
    size: fc.nat({ max: Number.MAX_SAFE_INTEGER }),
    rootHash: fc.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes) => Buffer.from(bytes)),
  });
  t.notThrows(() =>
    fc.assert(
      fc.property(checkpoint, extensions, (c: Checkpoint, ext) => {
        const body = checkpointBody(c);
        const parsed = parseCheckpointBody(body + ext.map((line) => `${line}\n`).join(''));
        return parsed.origin === c.origin && parsed.size === c.size && parsed.rootHash.equals(c.rootHash);
      }),
    ),
  );
});

test('property: a size or root line that is not canonical is rejected with an Error', (t) => {
  const size = fc
    .string({ unit: fc.constantFrom(...'0123456789-+. xe'), minLength: 1, maxLength: 6 })
    .filter((s) => !/^(?:0|[1-9][0-9]*)$/.test(s));
  const root = fc
    .uint8Array({ maxLength: 40 })
    .filter((bytes) => bytes.length !== 32)
    .map((bytes) => Buffer.from(bytes).toString('base64'));
  t.notThrows(() =>
    fc.assert(
      fc.property(size, root, (badSize, badRoot) => {
        const good = ROOT.toString('base64');
        const threw = (body: string) => {
          try {
            parseCheckpointBody(body);
            return false;
          } catch (error) {
            return error instanceof Error;
          }
        };
        return threw(`o\n${badSize}\n${good}\n`) && threw(`o\n1\n${badRoot}\n`);
      }),
    ),
  );
});

test('property: parseCheckpointBody never throws anything but Error', (t) => {
  const text = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 120 }),
    fc.string({ unit: fc.constantFrom('\n', '0', '1', 'A', '=', '/', 'o'), maxLength: 80 }),
  );
  t.notThrows(() =>
    fc.assert(
      fc.property(text, (body) => {
        try {
          const parsed = parseCheckpointBody(body);
          return parsed.rootHash.length === 32 && Number.isSafeInteger(parsed.size);
        } catch (error) {
          return error instanceof Error;
        }
      }),
      { numRuns: 500 },
    ),
  );
});
