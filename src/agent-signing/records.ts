/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts). Types only: the store imports them, so nothing here runs
 * (test/architecture/layers.test.ts holds it to that).
 */

/** One agent's Ed25519 key for signing its HTTP requests (Web Bot Auth); the private half sealed. */
export interface AgentSigningKeyRecord {
  workspaceId: string;
  agentId: string;
  /** RFC 7638 JWK thumbprint (SHA-256, base64url) of the public JWK: the signatures' `keyid`. */
  kid: string;
  publicJwk: { kty: 'OKP'; crv: 'Ed25519'; x: string };
  /** base64url(iv ‖ ciphertext ‖ tag) of the PKCS#8 DER private key (lib/seal.ts), bound to wid/aid/kid. */
  sealedPrivateKey: string;
  createdAt: string;
  /** Signs no more from then on; still published in the directory for the grace period after it. */
  retiredAt: string | null;
}
