import { createHash, createPublicKey, sign, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { isPaddedBase64 } from '../lib/base64.js';

/**
 * C2SP tlog-checkpoint bodies and C2SP signed notes with Ed25519 (signature type 0x01), byte for
 * byte compatible with golang.org/x/mod/sumdb/note.
 *
 * Rules enforced:
 * - Key names are non-empty, contain no Unicode space, no '+' and no control character;
 *   signNote and verifierKey throw on any other name.
 * - Note text is well-formed Unicode, ends with a newline and holds no ASCII control character
 *   other than newline; the signature is Ed25519 over exactly its UTF-8 bytes.
 * - A signed note is the text, a blank line, then 1 to 100 lines "— <name> <base64>\n" whose
 *   base64 (standard, padded, canonical) decodes to a 4-byte key id and at least one more byte.
 * - openNote answers null for anything malformed, never throws on note content, ignores lines by
 *   other keys (another name or key id), and requires every line by the given key to verify and at
 *   least one to exist (a failing signature by a known key rejects the whole note, per the spec).
 * - A checkpoint body has at least three non-empty lines: origin, decimal size without leading
 *   zeros, base64 of a 32-byte root; extension lines may follow, must be non-empty, are ignored.
 */

export interface Checkpoint {
  origin: string;
  size: number;
  rootHash: Buffer;
}

const ALG_ED25519 = 0x01;
const KEY_ID_BYTES = 4;
const ED25519_SIGNATURE_BYTES = 64;
const ROOT_HASH_BYTES = 32;
const MAX_SIGNATURES = 100;
const SIGNATURE_PREFIX = '\u2014 ';
// Go's unicode.IsSpace also counts U+0085; \s covers the rest (and U+FEFF, which is refused too).
// eslint-disable-next-line no-control-regex -- a key name may hold no control character
const NOT_IN_KEY_NAME = /[\s\u0085+\u0000-\u001f]/u;
// eslint-disable-next-line no-control-regex -- control characters other than the newline are refused in a note
const CONTROL_EXCEPT_NEWLINE = /[\u0000-\u0009\u000b-\u001f]/;
// With the u flag a paired surrogate is one code point, so only a lone surrogate matches.
const LONE_SURROGATE = /\p{Cs}/u;
const DECIMAL = /^(?:0|[1-9][0-9]*)$/;

/** "<origin>\n<size>\n<standard padded base64 of root>\n" */
export function checkpointBody(c: Checkpoint): string {
  if (typeof c.origin !== 'string' || c.origin === '' || c.origin.includes('\n') || !isNoteText(`${c.origin}\n`)) {
    throw new Error('checkpoint: origin must be a non-empty line without control characters');
  }
  if (!Number.isSafeInteger(c.size) || c.size < 0)
    throw new Error(`checkpoint: size must be a non-negative safe integer, got ${c.size}`);
  if (!(c.rootHash instanceof Uint8Array) || c.rootHash.length !== ROOT_HASH_BYTES) {
    throw new Error(`checkpoint: root hash must be ${ROOT_HASH_BYTES} bytes`);
  }
  return `${c.origin}\n${c.size}\n${Buffer.from(c.rootHash).toString('base64')}\n`;
}

/** Parses a checkpoint body; throws Error saying what is wrong. Extension lines are ignored. */
export function parseCheckpointBody(body: string): Checkpoint {
  if (typeof body !== 'string') throw new Error('checkpoint: body must be a string');
  if (!body.endsWith('\n')) throw new Error('checkpoint: body must end with a newline');
  if (!isNoteText(body)) throw new Error('checkpoint: body holds a control character or invalid Unicode');
  const lines = body.slice(0, -1).split('\n');
  if (lines.length < 3)
    throw new Error(`checkpoint: needs origin, size and root hash lines, got ${lines.length} line(s)`);
  const empty = lines.findIndex((line) => line === '');
  if (empty >= 0) throw new Error(`checkpoint: line ${empty + 1} is empty`);
  const [origin, sizeText, rootText] = lines as [string, string, string];
  if (!DECIMAL.test(sizeText)) throw new Error('checkpoint: size must be decimal digits without leading zeros');
  const size = Number(sizeText);
  if (!Number.isSafeInteger(size))
    throw new Error(`checkpoint: size ${sizeText} is larger than this implementation supports`);
  const rootHash = decodeStdBase64(rootText);
  if (rootHash?.length !== ROOT_HASH_BYTES)
    throw new Error(`checkpoint: root hash must be the standard base64 of ${ROOT_HASH_BYTES} bytes`);
  return { origin, size, rootHash };
}

/** First 4 bytes of SHA-256(keyName || 0x0A || 0x01 || raw 32-byte Ed25519 public key). */
export function noteKeyId(keyName: string, publicKey: KeyObject): Buffer {
  assertKeyName(keyName);
  return keyIdOf(keyName, rawPublicKey(publicKey));
}

/** The verifier key text "<name>+<8 hex key id>+<base64(0x01 || raw public key)>". */
export function verifierKey(keyName: string, publicKey: KeyObject): string {
  assertKeyName(keyName);
  const raw = rawPublicKey(publicKey);
  const encoded = Buffer.concat([Buffer.from([ALG_ED25519]), raw]).toString('base64');
  return `${keyName}+${keyIdOf(keyName, raw).toString('hex')}+${encoded}`;
}

/** body + "\n" + "— <keyName> <base64(key id || Ed25519 signature over body)>\n". */
export function signNote(body: string, keyName: string, privateKey: KeyObject): string {
  assertKeyName(keyName);
  if (privateKey.type !== 'private' || privateKey.asymmetricKeyType !== 'ed25519') {
    throw new TypeError('signNote: the key must be an Ed25519 private key');
  }
  if (typeof body !== 'string' || !body.endsWith('\n') || !isNoteText(body)) {
    throw new Error('signNote: the body must end with a newline and hold no control character other than newline');
  }
  const keyId = keyIdOf(keyName, rawPublicKey(privateKey));
  const signature = sign(null, Buffer.from(body, 'utf8'), privateKey);
  return `${body}\n${SIGNATURE_PREFIX}${keyName} ${Buffer.concat([keyId, signature]).toString('base64')}\n`;
}

/** The note's body if it is well formed and carries a valid signature by exactly this key; otherwise null. */
export function openNote(note: string, keyName: string, publicKey: KeyObject): { body: string } | null {
  const raw = rawPublicKey(publicKey);
  if (!isKeyName(keyName)) return null;
  const keyId = keyIdOf(keyName, raw);
  const verifyKey = publicKey.type === 'public' ? publicKey : createPublicKey(publicKey);

  if (typeof note !== 'string' || !isNoteText(note)) return null;
  const split = note.lastIndexOf('\n\n');
  if (split < 0) return null;
  const body = note.slice(0, split + 1);
  const block = note.slice(split + 2);
  if (block === '' || !block.endsWith('\n')) return null;
  const lines = block.slice(0, -1).split('\n');
  if (lines.length > MAX_SIGNATURES) return null;

  const bodyBytes = Buffer.from(body, 'utf8');
  let verified = false;
  for (const line of lines) {
    if (!line.startsWith(SIGNATURE_PREFIX)) return null;
    const rest = line.slice(SIGNATURE_PREFIX.length);
    const space = rest.indexOf(' ');
    if (space < 0) return null;
    const name = rest.slice(0, space);
    const decoded = decodeStdBase64(rest.slice(space + 1));
    if (!isKeyName(name) || decoded === undefined || decoded.length <= KEY_ID_BYTES) return null;
    if (name !== keyName || !decoded.subarray(0, KEY_ID_BYTES).equals(keyId)) continue;
    const signature = decoded.subarray(KEY_ID_BYTES);
    if (signature.length !== ED25519_SIGNATURE_BYTES || !verify(null, bodyBytes, verifyKey, signature)) return null;
    verified = true;
  }
  return verified ? { body } : null;
}

function keyIdOf(keyName: string, raw: Buffer): Buffer {
  return createHash('sha256')
    .update(keyName, 'utf8')
    .update(Buffer.from([0x0a, ALG_ED25519]))
    .update(raw)
    .digest()
    .subarray(0, KEY_ID_BYTES);
}

/** The raw 32-byte Ed25519 public key of a public or private KeyObject. */
function rawPublicKey(key: KeyObject): Buffer {
  if (key.asymmetricKeyType !== 'ed25519' || key.type === 'secret')
    throw new TypeError('note: the key must be an Ed25519 key');
  const publicKey = key.type === 'public' ? key : createPublicKey(key);
  const x = publicKey.export({ format: 'jwk' }).x;
  const raw = x === undefined ? undefined : Buffer.from(x, 'base64url');
  if (raw?.length !== 32) throw new TypeError('note: could not read the Ed25519 public key');
  return raw;
}

function isKeyName(name: unknown): name is string {
  return typeof name === 'string' && name !== '' && !LONE_SURROGATE.test(name) && !NOT_IN_KEY_NAME.test(name);
}

function assertKeyName(name: string): void {
  if (!isKeyName(name))
    throw new Error(`note: invalid key name ${JSON.stringify(name)} (non-empty, no spaces, no '+')`);
}

function isNoteText(text: string): boolean {
  return !LONE_SURROGATE.test(text) && !CONTROL_EXCEPT_NEWLINE.test(text);
}

/** Standard padded base64 in its one canonical spelling, or undefined. */
function decodeStdBase64(text: string): Buffer | undefined {
  if (text === '' || !isPaddedBase64(text)) return undefined;
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : undefined;
}
