import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { checkReceiptClaims, type ReceiptClaims } from './types.js';

/**
 * Receipt verification against a JSON Web Key Set: the same code answers `POST /v1/verify` and
 * `svc receipt verify`. People trust its answer with money, so it says "valid" only when every
 * rule holds, and it never throws.
 *
 * Rules enforced, in this order (the first that fails is the reason):
 * 1. `malformed`: not a string, longer than 8 KB, not three dot-separated base64url segments
 *    (only the signature may be empty, as in an unsecured token, refused in rule 2),
 *    a header or payload that is not a UTF-8 JSON object, a header with `crit` or `b64` (no
 *    extension is understood), or claims missing or of the wrong type (see ./types.ts).
 * 2. `bad_signature`: the header's alg is anything but EdDSA (none, HS256, RS256, ES256, ...).
 *    Only then is a key looked up, and only an Ed25519 key: no other algorithm can reach a key.
 *    Then the signature must be the one base64url form of 64 bytes, else `malformed`: a decoder
 *    that ignores the spare bits of the last character would accept four spellings of one
 *    receipt, and whoever keys on the token text (replay detection) must see one.
 * 3. `unknown_key`: the header names no kid, or no key of the set has that kid with
 *    kty OKP, crv Ed25519, use "sig" (and alg EdDSA when it states one, key_ops including
 *    "verify" when it has them). Only receipt keys (use "sig") verify receipts: a ledger key
 *    (use "ledger") with that kid does not. A kid listed in `revokedKids` but absent from the set
 *    gives `revoked` instead.
 * 4. `bad_signature`: the signature does not verify with that key: Ed25519 (RFC 8032) over the
 *    ASCII of `header.payload` as sent (RFC 7515's signing input), checked by node:crypto on the
 *    libuv thread pool, not on the event loop (jose's compactVerify did the same check through
 *    WebCrypto, with its own second parse of the header and more copies per call).
 * 5. `revoked`: the kid is in `revokedKids` (checked after the signature when the key is known,
 *    so a forgery under a revoked key that is still in the set says bad_signature).
 * 6. `expired`: now >= exp, with no leeway (0 s: a receipt is checked by the machine that
 *    issued it or against its published keys, and an expiry is a promise to the holder).
 *    Checked only after the signature verified, so a forged token is never called "expired".
 * Any unexpected failure is `malformed`. `claims` is set only when valid; `kid` whenever the
 * header named one.
 */

export type VerifyReason = 'malformed' | 'bad_signature' | 'unknown_key' | 'expired' | 'revoked';

export interface VerifyResult {
  valid: boolean;
  claims: ReceiptClaims | null;
  reason: VerifyReason | null;
  kid: string | null;
}

export interface VerifyKeys {
  jwks: { keys: unknown[] };
  revokedKids?: ReadonlySet<string>;
}

export const MAX_RECEIPT_LENGTH = 8 * 1024;
const ED25519_SIGNATURE_BYTES = 64;
const SEGMENT = /^[A-Za-z0-9_-]+$/;
/** Empty only in an unsecured (alg "none") token, which is then refused for its alg. */
const SIGNATURE = /^[A-Za-z0-9_-]*$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

const invalid = (reason: VerifyReason, kid: string | null): VerifyResult => ({
  valid: false,
  claims: null,
  reason,
  kid,
});

export async function verifyReceipt(token: string, keys: VerifyKeys, nowMs: number): Promise<VerifyResult> {
  let kid: string | null = null;
  try {
    if (typeof token !== 'string' || token.length > MAX_RECEIPT_LENGTH) return invalid('malformed', null);
    const parts = token.split('.');
    const [encodedHeader, encodedPayload, signature] = parts as [string, string, string];
    if (
      parts.length !== 3 ||
      !SEGMENT.test(encodedHeader) ||
      !SEGMENT.test(encodedPayload) ||
      !SIGNATURE.test(signature)
    )
      return invalid('malformed', null);

    const header = jsonObject(encodedHeader);
    if (!header) return invalid('malformed', null);
    kid = typeof header.kid === 'string' ? header.kid : null;
    if ('crit' in header || 'b64' in header) return invalid('malformed', kid);
    const checked = checkReceiptClaims(jsonObject(encodedPayload));
    if (!checked.ok) return invalid('malformed', kid);
    if (header.alg !== 'EdDSA') return invalid('bad_signature', kid);
    const signatureBytes = canonicalSignature(signature);
    if (!signatureBytes) return invalid('malformed', kid);
    if (kid === null) return invalid('unknown_key', null);

    const revoked = keys?.revokedKids?.has(kid) === true;
    const key = receiptKey(keys?.jwks, kid);
    if (!key) return invalid(revoked ? 'revoked' : 'unknown_key', kid);
    // The segments are base64url characters only (checked above), so ASCII is their byte form.
    const signingInput = Buffer.from(`${encodedHeader}.${encodedPayload}`, 'latin1');
    if (!(await verifyEd25519(signingInput, key, signatureBytes))) return invalid('bad_signature', kid);
    if (revoked) return invalid('revoked', kid);
    // Written so that a NaN clock fails closed.
    if (!(nowMs < checked.claims.exp * 1000)) return invalid('expired', kid);
    return { valid: true, claims: checked.claims, reason: null, kid };
  } catch {
    return invalid('malformed', kid);
  }
}

/** The signature's 64 bytes when the segment is their one base64url spelling; null otherwise. */
function canonicalSignature(segment: string): Buffer | null {
  const bytes = Buffer.from(segment, 'base64url');
  return bytes.length === ED25519_SIGNATURE_BYTES && bytes.toString('base64url') === segment ? bytes : null;
}

/** Ed25519 verification on the thread pool; an error (a key of the wrong type) is thrown. */
function verifyEd25519(data: Buffer, key: KeyObject, signature: Buffer): Promise<boolean> {
  return new Promise((resolve, reject) => {
    verify(null, data, key, signature, (err, ok) => (err ? reject(err) : resolve(ok)));
  });
}

/** A base64url JWS segment decoded to a JSON object; null when it is not one. */
export function jsonObject(segment: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(utf8.decode(Buffer.from(segment, 'base64url')));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/** The receipt key (use "sig") with this kid, as a public KeyObject; null when there is none. */
function receiptKey(jwks: VerifyKeys['jwks'] | undefined, kid: string): KeyObject | null {
  const candidates = Array.isArray(jwks?.keys) ? jwks.keys : [];
  for (const entry of candidates) {
    if (typeof entry !== 'object' || entry === null) continue;
    const jwk = entry as Record<string, unknown>;
    if (jwk.kid !== kid || jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || jwk.use !== 'sig' || typeof jwk.x !== 'string')
      continue;
    if (jwk.alg !== undefined && jwk.alg !== 'EdDSA') continue;
    if (jwk.key_ops !== undefined && !(Array.isArray(jwk.key_ops) && jwk.key_ops.includes('verify'))) continue;
    const key = importPublic(jwk.x);
    if (key) return key;
  }
  return null;
}

/**
 * Public keys by their x, imported once and reused by every check under that key. Bounded: a key
 * set is small, and a caller's odd sets cannot grow it for ever.
 */
const imported = new Map<string, KeyObject>();
const MAX_IMPORTED = 256;

function importPublic(x: string): KeyObject | null {
  const cached = imported.get(x);
  if (cached) return cached;
  let key: KeyObject;
  try {
    key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x }, format: 'jwk' });
  } catch {
    return null;
  }
  if (imported.size >= MAX_IMPORTED) imported.clear();
  imported.set(x, key);
  return key;
}
