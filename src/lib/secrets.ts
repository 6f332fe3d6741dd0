import { hash } from 'node:crypto';

/**
 * Keys and tokens are stored only as SHA-256 hashes and looked up by hash. A 256-bit random
 * secret needs no salt or slow hash: guessing is hopeless, and looking a secret up by its hash
 * means no secret is ever compared character by character (no timing to measure). Passwords
 * (low entropy) use argon2id instead.
 */
export function secretHash(secret: string): string {
  return hash('sha256', secret, 'base64url');
}
