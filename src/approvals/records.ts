/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts; ids: src/lib/ids.ts). Types only: the store imports
 * them, so nothing here runs (test/architecture/layers.test.ts holds it to that).
 */

export interface ApprovalRecord {
  id: string;
  workspaceId: string;
  actionId: string;
  agentId: string;
  status: 'pending' | 'approved' | 'denied' | 'expired';
  approvers: string[] | null;
  approvals: Array<{ by: string; at: string; note: string | null }>;
  requiredApprovals: number;
  separationOfDuties: boolean;
  createdAt: string;
  expiresAt: string;
  /** Who denied it and why, or why it turned into a deny (limits used meanwhile, expiry). */
  decidedBy?: string | null;
  reason?: string | null;
  /** Whom the agent acted for when the action asked: separation of duties holds against them. */
  requestedFor?: string | null;
  /** When it stopped waiting (approved, denied or expired); absent while pending and on older records. */
  decidedAt?: string;
  /** A bulk freeze past the ceiling, waiting for a person (actionId and agentId are then ''). */
  /** `all`: the freeze named every agent, so approving it also turns on "stop every agent". */
  freeze?: { agentIds: string[]; reason: string; requestedBy: string; tokenId: string; all?: boolean };
}
