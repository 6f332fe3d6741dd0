/**
 * The shapes of the records the AP2 domain writes (src/store/tables.ts lists their tables). Types
 * only: the store imports them, so nothing here runs.
 */

/** A public key as a JWK (no private members: those are refused on the way in). */
export interface PublicJwk {
  kty: string;
  crv?: string;
  x?: string;
  y?: string;
  n?: string;
  e?: string;
  kid?: string;
  alg?: string;
  use?: string;
}

/**
 * An issuer whose AP2 mandates the workspace trusts: its keys inline (`jwks`, matched by the
 * credential's `kid`) and/or certificate roots (`x5cRoots`, PEM) a credential's `x5c` chain must
 * end at. `iss`, when set, must be the credential's `iss`.
 */
export interface TrustedIssuer {
  name: string;
  iss?: string;
  jwks?: { keys: PublicJwk[] };
  x5cRoots?: string[];
}

export interface Ap2SettingsRecord {
  workspaceId: string;
  issuers: TrustedIssuer[];
  updatedAt: string;
  updatedBy: string;
}

/** The public key an agent holds for AP2 (`cnf.jwk` of its open mandates; it signs closed ones). */
export interface HolderKeyRecord {
  workspaceId: string;
  agentId: string;
  jwk: PublicJwk;
  /** RFC 7638 thumbprint (SHA-256, base64url). */
  thumbprint: string;
  registeredAt: string;
  registeredBy: string;
}

/** An open Payment Mandate imported for an agent, and what became of it. */
export interface Ap2MandateRecord {
  id: string;
  workspaceId: string;
  agentId: string;
  /** base64url SHA-256 of the issuer-signed JWT: the same whatever disclosures are presented. */
  credentialHash: string;
  issuer: string;
  vct: string;
  expiresAt: string | null;
  /** The constraints as disclosed at import. */
  constraints: Array<Record<string, unknown>>;
  /** The mandate rules made from them (their `source` names this record). */
  ruleIds: string[];
  /** Whether the mandate may be presented more than once (it has `payment.agent_recurrence`). */
  recurring: boolean;
  importedAt: string;
  importedBy: string;
  /** The action of the latest presentation of a closed mandate chained to this one. */
  lastPresentation: { actionId: string; at: string } | null;
}
