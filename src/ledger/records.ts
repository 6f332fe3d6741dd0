/** What a caller appends to a workspace's ledger (API.md section 5). */
export interface LedgerEvent {
  workspaceId: string;
  /** agent:agt_…, user:usr_…, token:<name>, key:key_…, operator:cli, system */
  actor: string;
  tokenId?: string;
  kind: string;
  subject: string;
  data: Record<string, unknown>;
}

/** An event as appended: its place in the workspace's ledger, its id and its time. */
export interface LedgerRecord extends LedgerEvent {
  index: number;
  id: string;
  at: string;
}
