import { randomFillSync } from 'node:crypto';

/**
 * Cryptographically random bytes drawn from a pooled buffer, refilled from the CSPRNG 8 KiB at a
 * time. Per-request identifiers (request ids, trace and span ids) need fresh randomness on every
 * request (as does the refresh grace seal's nonce); one OpenSSL call per 8 KiB instead of several per
 * request keeps that off the hot path.
 * Each byte is handed out once. Long-lived secrets (keys, tokens) do not use the pool.
 */
const SIZE = 8192;
const pool = Buffer.allocUnsafe(SIZE);
let offset = SIZE;

function take(n: number): number {
  if (offset + n > SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  const at = offset;
  offset += n;
  return at;
}

/** `n` random bytes, copied out of the pool: for values that must be unique, not secret (a nonce). */
export function randomBytesPooled(n: number): Buffer {
  const at = take(n);
  return Buffer.from(pool.subarray(at, at + n));
}

export function randomHex(bytes: number): string {
  const at = take(bytes);
  return pool.toString('hex', at, at + bytes);
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `length` uniform base62 characters (rejection sampling: bytes of 248 and up are skipped). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const at = take(length);
    for (let i = at; i < at + length && out.length < length; i += 1) {
      const b = pool[i]!;
      if (b < 248) out += BASE62[b % 62];
    }
  }
  return out;
}
