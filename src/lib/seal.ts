import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Secrets the service must use later (a two-factor secret, an upstream's bearer secret), sealed
 * at rest with AES-256-GCM under a key derived from the master key for one purpose, and bound to
 * what they belong to (the additional data): a sealed value copied onto another record does not
 * open. Layout: base64url(iv ‖ ciphertext ‖ tag).
 */
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A purpose-bound key derived from the master key (HKDF-SHA256). */
export function deriveKey(master: Buffer, purpose: string, length = 32): Buffer {
  return Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), `svc:${purpose}`, length));
}

export function sealBytes(masterKey: Buffer, purpose: string, boundTo: string, plain: Uint8Array): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', deriveKey(masterKey, purpose), iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(boundTo, 'utf8'));
  return Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]).toString('base64url');
}

/** Throws when the master key is not the one that sealed it, or the value or its binding changed. */
export function unsealBytes(masterKey: Buffer, purpose: string, boundTo: string, sealed: string): Buffer {
  const bytes = Buffer.from(sealed, 'base64url');
  if (bytes.length <= IV_BYTES + TAG_BYTES) throw new Error('sealed value too short');
  const decipher = createDecipheriv('aes-256-gcm', deriveKey(masterKey, purpose), bytes.subarray(0, IV_BYTES), {
    authTagLength: TAG_BYTES,
  });
  decipher.setAAD(Buffer.from(boundTo, 'utf8'));
  decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
  return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]);
}

export const sealText = (masterKey: Buffer, purpose: string, boundTo: string, text: string): string =>
  sealBytes(masterKey, purpose, boundTo, Buffer.from(text, 'utf8'));

export const unsealText = (masterKey: Buffer, purpose: string, boundTo: string, sealed: string): string =>
  unsealBytes(masterKey, purpose, boundTo, sealed).toString('utf8');
