import type { Key, KeyPart } from './types.js';

/**
 * Tuple keys as bytes whose plain byte order (memcmp: PostgreSQL's bytea order) is the store's key
 * order, the one LMDB's ordered-binary keys already have: element by element; numbers before
 * strings; numbers by value; strings by their UTF-8 bytes; a tuple before its extensions. A bare
 * string key is the one-element tuple, as on LMDB.
 *
 * Each element is a tag and a body:
 * - number: 0x01, then the IEEE-754 double big-endian with the sign bit flipped for positives and
 *   every bit flipped for negatives (so unsigned byte order is numeric order); -0 is 0.
 * - string: 0x02, then its UTF-8 bytes with each 0x00 written 0x00 0xFF, then 0x00 as terminator.
 * Nothing follows the last element, and every tag (0x01, 0x02) is below 0xFF; so a tuple sorts
 * before its extensions, and `encode(t) + 0xFF` sorts after every key that extends `t`.
 */

const NUMBER = 0x01;
const STRING = 0x02;
export const AFTER_ALL = 0xff;

export function encodeKey(key: Key): Buffer {
  const parts = Array.isArray(key) ? key : [key];
  const chunks: Buffer[] = [];
  for (const part of parts) {
    if (typeof part === 'number') {
      if (!Number.isFinite(part)) throw new TypeError('a key number must be finite');
      const b = Buffer.allocUnsafe(9);
      b[0] = NUMBER;
      b.writeDoubleBE(part === 0 ? 0 : part, 1);
      if (part < 0) for (let i = 1; i < 9; i++) b[i] = ~b[i]! & 0xff;
      else b[1] = b[1]! ^ 0x80;
      chunks.push(b);
    } else if (typeof part === 'string') {
      const utf8 = Buffer.from(part, 'utf8');
      let zeros = 0;
      for (const byte of utf8) if (byte === 0) zeros++;
      const b = Buffer.allocUnsafe(utf8.length + zeros + 2);
      b[0] = STRING;
      let at = 1;
      for (const byte of utf8) {
        b[at++] = byte;
        if (byte === 0) b[at++] = 0xff;
      }
      b[at] = 0;
      chunks.push(b);
    } else {
      throw new TypeError('a key element is a string or a number');
    }
  }
  return Buffer.concat(chunks);
}

/**
 * The longest key the store takes, in this encoding's bytes. LMDB refuses a key over 1978 bytes in
 * its own encoding (never longer than this one), so a longer key is refused here first, on either
 * backend: no record has one.
 */
export const MAX_KEY_BYTES = 1900;

/** Whether a key is within MAX_KEY_BYTES; measured exactly only when a quick upper bound is over it. */
export function keyFits(key: Key): boolean {
  const parts = Array.isArray(key) ? key : [key];
  let bound = 0;
  for (const part of parts) bound += typeof part === 'string' ? part.length * 3 + 2 : 9;
  return bound <= MAX_KEY_BYTES || encodeKey(key).length <= MAX_KEY_BYTES;
}

export function decodeKey(bytes: Uint8Array): KeyPart[] {
  const out: KeyPart[] = [];
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  while (at < buf.length) {
    const tag = buf[at++];
    if (tag === NUMBER) {
      const b = Buffer.from(buf.subarray(at, at + 9 - 1));
      if (b[0]! & 0x80) b[0] = b[0]! ^ 0x80;
      else for (let i = 0; i < 8; i++) b[i] = ~b[i]! & 0xff;
      out.push(b.readDoubleBE(0));
      at += 8;
    } else if (tag === STRING) {
      const bytesOut: number[] = [];
      for (;;) {
        const byte = buf[at++];
        if (byte === undefined) throw new TypeError('a truncated key');
        if (byte === 0) {
          if (buf[at] === 0xff) {
            bytesOut.push(0);
            at++;
            continue;
          }
          break;
        }
        bytesOut.push(byte);
      }
      out.push(Buffer.from(bytesOut).toString('utf8'));
    } else {
      throw new TypeError(`an unknown key tag ${String(tag)}`);
    }
  }
  return out;
}

/** The store's key order on decoded tuples (the reference the encodings are checked against). */
export function compareKeys(a: readonly KeyPart[], b: readonly KeyPart[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (typeof x === 'number') {
      if (typeof y !== 'number') return -1;
      if (x !== y) return x < y ? -1 : 1;
    } else {
      if (typeof y === 'number') return 1;
      if (x !== y) return Buffer.compare(Buffer.from(x, 'utf8'), Buffer.from(y, 'utf8'));
    }
  }
  return a.length - b.length;
}

export const toTuple = (key: Key): KeyPart[] => (Array.isArray(key) ? key : [key]);

/** Whether `key` extends (or equals) `prefix`. */
export function hasPrefix(key: readonly KeyPart[], prefix: readonly KeyPart[]): boolean {
  if (key.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (key[i] !== prefix[i]) return false;
  return true;
}
