/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts; ids: src/lib/ids.ts). Types only: the store imports
 * them, so nothing here runs (test/architecture/layers.test.ts holds it to that).
 */

export type ServiceTokenScope =
  | 'agents:read'
  | 'agents:write'
  | 'agents:freeze'
  | 'approvals:read'
  | 'evidence:read'
  | 'mcp:read'
  | 'mcp:write'
  | 'setup:read'
  | 'setup:write';

export interface ServiceTokenRecord {
  id: string;
  workspaceId: string;
  name: string;
  scopes: ServiceTokenScope[];
  ipAllow: string[];
  hash: string;
  createdAt: string;
  expiresAt: string;
  revokedAt: string | null;
}
