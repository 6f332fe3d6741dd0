/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts; ids: src/lib/ids.ts). Types only: the store imports
 * them, so nothing here runs (test/architecture/layers.test.ts holds it to that).
 */

/** What a signing key signs: receipts, or the ledger's checkpoints (signing/crypto.ts keeps the two apart). */
export type SigningKeyUse = 'receipt' | 'ledger';

/** A receipt or ledger signing key, its private half sealed (signing/crypto.ts). */
export interface SigningKeyRecord {
  /** RFC 7638 JWK thumbprint (base64url, SHA-256) of the public JWK. */
  kid: string;
  use: SigningKeyUse;
  publicJwk: { kty: 'OKP'; crv: 'Ed25519'; x: string };
  /** base64url(iv(12) || ciphertext || tag(16)) of the PKCS#8 DER private key; see signing/crypto.ts. */
  sealedPrivateKey: string;
  createdAt: string;
  /** No longer signs; still published and verifiable. */
  retiredAt: string | null;
  /** No longer published; online verification answers reason "revoked". */
  revokedAt: string | null;
}
