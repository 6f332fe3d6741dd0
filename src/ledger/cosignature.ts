import { createHash, createPublicKey, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';

/**
 * C2SP tlog-cosignature, the Ed25519 kind (cosignature/v1): what a witness signs over a checkpoint
 * it found consistent with what it saw before, as a signed-note signature line.
 *
 * Rules:
 * - A cosigner's verifier key is `<name>+<8 hex key id>+<base64(0x04 || 32-byte Ed25519 key)>`;
 *   its key id is the first 4 bytes of SHA-256(name || 0x0A || 0x04 || key).
 * - The line is `— <name> <base64(key id || 8-byte big-endian timestamp || 64-byte signature)>`.
 * - The signed message is `cosignature/v1\n`, `time <timestamp>\n`, then the checkpoint's whole
 *   note body (its text up to and with the newline before the blank line).
 * - Reading never throws on a line's content: a line by another key, or one that does not verify,
 *   answers null.
 */

export const COSIGNATURE_ALG = 0x04;
const KEY_ID_BYTES = 4;
const TIMESTAMP_BYTES = 8;
const SIGNATURE_BYTES = 64;
const LINE_PREFIX = '\u2014 ';
const MAX_TIMESTAMP = 2n ** 63n - 1n;
// eslint-disable-next-line no-control-regex -- a key name may hold no control character
const KEY_NAME = /^[^\s+\u0000-\u001f]+$/u;

/** A witness's public key as a verifier of its cosignatures. */
export interface CosignerKey {
  name: string;
  keyId: Buffer;
  publicKey: KeyObject;
  /** The key as it was written (`<name>+<id>+<key>`). */
  text: string;
}

/** A cosignature line that verified: who made it and when (POSIX seconds). */
export interface Cosignature {
  witness: string;
  timestamp: number;
  /** The whole line, without its newline. */
  line: string;
}

function keyIdOf(name: string, raw: Buffer): Buffer {
  return createHash('sha256')
    .update(name, 'utf8')
    .update(Buffer.from([0x0a, COSIGNATURE_ALG]))
    .update(raw)
    .digest()
    .subarray(0, KEY_ID_BYTES);
}

/** Reads a cosigner verifier key; throws an Error saying what is wrong. */
export function parseCosignerKey(text: string): CosignerKey {
  const first = text.indexOf('+');
  const second = first < 0 ? -1 : text.indexOf('+', first + 1);
  if (second < 0) throw new Error('a witness key is <name>+<key id>+<key>');
  const [name, id, encoded] = [text.slice(0, first), text.slice(first + 1, second), text.slice(second + 1)];
  if (!KEY_NAME.test(name)) throw new Error('a witness key name holds no space, "+" or control character');
  const raw = Buffer.from(encoded, 'base64');
  if (raw.length !== 33 || raw[0] !== COSIGNATURE_ALG || raw.toString('base64') !== encoded)
    throw new Error('a witness key must be a cosignature/v1 Ed25519 key (type 0x04, 32 bytes)');
  const key = raw.subarray(1);
  const keyId = keyIdOf(name, key);
  if (!/^[0-9a-f]{8}$/i.test(id) || keyId.toString('hex') !== id.toLowerCase())
    throw new Error('the key id of a witness key does not match its name and key');
  const publicKey = createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: key.toString('base64url') },
    format: 'jwk',
  });
  return { name, keyId, publicKey, text };
}

/** The verifier key text of a cosigner: `<name>+<hex key id>+<base64(0x04 || key)>`. */
export function cosignerVerifierKey(name: string, publicKey: KeyObject): string {
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
  return `${name}+${keyIdOf(name, raw).toString('hex')}+${Buffer.concat([Buffer.from([COSIGNATURE_ALG]), raw]).toString('base64')}`;
}

/** The message a cosignature/v1 signs: the header, the time line, the checkpoint body. */
export function cosignedMessage(body: string, timestamp: number | bigint): Buffer {
  return Buffer.from(`cosignature/v1\ntime ${timestamp}\n${body}`, 'utf8');
}

/** The note body of a signed checkpoint (everything up to the blank line, with its newline). */
export function noteBody(note: string): string {
  const split = note.indexOf('\n\n');
  return split < 0 ? note : note.slice(0, split + 1);
}

/** The cosignature `line` makes by `key` over `body`, or null (another key's line, malformed, or not valid). */
export function openCosignature(line: string, body: string, key: CosignerKey): Cosignature | null {
  if (!line.startsWith(LINE_PREFIX)) return null;
  const rest = line.slice(LINE_PREFIX.length);
  const space = rest.indexOf(' ');
  if (space < 0 || rest.slice(0, space) !== key.name) return null;
  const encoded = rest.slice(space + 1);
  const bytes = Buffer.from(encoded, 'base64');
  if (bytes.toString('base64') !== encoded || bytes.length !== KEY_ID_BYTES + TIMESTAMP_BYTES + SIGNATURE_BYTES)
    return null;
  if (!bytes.subarray(0, KEY_ID_BYTES).equals(key.keyId)) return null;
  const timestamp = bytes.readBigUInt64BE(KEY_ID_BYTES);
  if (timestamp > MAX_TIMESTAMP) return null;
  const signature = bytes.subarray(KEY_ID_BYTES + TIMESTAMP_BYTES);
  if (!verify(null, cosignedMessage(body, timestamp), key.publicKey, signature)) return null;
  return { witness: key.name, timestamp: Number(timestamp), line };
}

/**
 * The valid cosignatures by `key` among the signature lines of `text` (an add-checkpoint answer,
 * or a served checkpoint's signature block); lines by other keys are ignored.
 */
export function cosignaturesIn(text: string, body: string, key: CosignerKey): Cosignature[] {
  return text
    .split('\n')
    .map((line) => openCosignature(line, body, key))
    .filter((c): c is Cosignature => c !== null);
}
