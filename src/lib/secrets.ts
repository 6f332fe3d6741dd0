import { createHash, hash, timingSafeEqual } from 'node:crypto';

/**
 * Keys and tokens are stored only as SHA-256 hashes and looked up by hash. A 256-bit random
 * secret needs no salt or slow hash: guessing is hopeless, and lookup by hash keeps the
 * comparison out of JavaScript string equality. Passwords (low entropy) use argon2id instead.
 */
export function secretHash(secret: string): string {
  return hash('sha256', secret, 'base64url');
}

/** Constant-time comparison of two secrets (or their hashes) of any length. */
export function secretsEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a, 'utf8').digest();
  const hb = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(ha, hb);
}

/** Shows a secret's shape and prefix in messages and logs, never its value. */
export function secretHint(secret: string): string {
  const i = secret.indexOf('_');
  return i > 0 ? `${secret.slice(0, i + 1)}…` : '…';
}
