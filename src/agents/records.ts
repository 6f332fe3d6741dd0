/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts; ids: src/lib/ids.ts). Types only: the store imports
 * them, so nothing here runs (test/architecture/layers.test.ts holds it to that).
 */

/**
 * Why an agent is stopped, and by whom (docs/gate.md#approvals-and-the-kill-switch). An agent with
 * any hold is stopped.
 */
export interface Hold {
  hold: string;
  reason: string;
  by: string;
  at: string;
}

export interface AgentRecord {
  id: string;
  workspaceId: string;
  name: string;
  actsFor: string | null;
  tags: string[];
  /** Schema 4; absent in older records means none. */
  holds?: Hold[];
  /** The blueprint it was registered from (bp_ id); absent or null for none. */
  blueprint?: string | null;
  createdAt: string;
  removedAt: string | null;
}

/**
 * "Stop every agent" in force for a workspace (absent: not in force): written by the kill switch,
 * read by every agent's standing (agents/standing.ts), so declared here, below both.
 */
export interface StopAllRecord {
  reason: string;
  by: string;
  at: string;
}
