/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts; ids: src/lib/ids.ts). Types only: the store imports
 * them, so nothing here runs (test/architecture/layers.test.ts holds it to that).
 */

/**
 * What a signing key signs: svc's receipts (Ed25519), the ledger's checkpoints (Ed25519), or the
 * receipts in the agent-commerce protocols' shapes (`receipt-es256`: ES256, P-256), which AP2
 * receipts and signed ACP allowances are (signing/crypto.ts keeps them apart).
 */
export type SigningKeyUse = 'receipt' | 'ledger' | 'receipt-es256';

/** A signing key's public half as stored: Ed25519 (receipt, ledger) or P-256 (receipt-es256). */
export type SigningPublicJwk =
  { kty: 'OKP'; crv: 'Ed25519'; x: string } | { kty: 'EC'; crv: 'P-256'; x: string; y: string };

/** A receipt or ledger signing key, its private half sealed (signing/crypto.ts). */
export interface SigningKeyRecord {
  /** RFC 7638 JWK thumbprint (base64url, SHA-256) of the public JWK. */
  kid: string;
  use: SigningKeyUse;
  publicJwk: SigningPublicJwk;
  /** base64url(iv(12) || ciphertext || tag(16)) of the PKCS#8 DER private key; see signing/crypto.ts. */
  sealedPrivateKey: string;
  createdAt: string;
  /** No longer signs; still published and verifiable. */
  retiredAt: string | null;
  /** No longer published; online verification answers reason "revoked". */
  revokedAt: string | null;
}
