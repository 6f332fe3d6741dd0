import type { RateLimits } from '../settings/schema.js';

/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts; ids: src/lib/ids.ts). Types only: the store imports
 * them, so nothing here runs (test/architecture/layers.test.ts holds it to that).
 */

export type KeyScope = 'agent' | 'inference' | 'admin';

export interface KeyRecord {
  id: string;
  workspaceId: string;
  scope: KeyScope;
  name: string | null;
  principal: string | null;
  team: string | null;
  defaultTaskClass: string | null;
  policyProfile: string | null;
  agentId: string | null;
  /** Requests and tokens per minute (absent: none); docs/gateway.md#rate-limits. */
  limits?: RateLimits | null;
  /** SHA-256 of the key value (base64url). */
  hash: string;
  createdAt: string;
  createdBy: string;
  /** From this instant on the key is refused as a revoked one is (absent or null: never; keys minted before expiry existed have none). */
  expiresAt?: string | null;
  revokedAt: string | null;
}
