/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts; ids: src/lib/ids.ts). Types only: the store imports
 * them, so nothing here runs (test/architecture/layers.test.ts holds it to that).
 */

/**
 * A button of an approval card sent to the chat relay, stored by the SHA-256 of its token (the
 * token itself is never stored): what a click on it decides, until the approval's expiry.
 */
export interface ChatButtonRecord {
  workspaceId: string;
  approvalId: string;
  decision: 'approve' | 'deny';
  expiresAt: string;
}

/** A chat user (of a platform) mapped by an owner or admin to a member of the workspace. */
export interface ChatUserRecord {
  platform: string;
  chatUserId: string;
  userId: string;
  updatedAt: string;
  updatedBy: string;
}
