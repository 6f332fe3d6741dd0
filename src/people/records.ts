/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts; ids are the prefixed ids of API.md). Types only: the store imports
 * them, so nothing here runs (test/architecture/layers.test.ts holds it to that).
 */

export interface WorkspaceRecord {
  id: string;
  name: string;
  createdAt: string;
}

export interface UserRecord {
  id: string;
  email: string;
  name: string;
  /** argon2id PHC string; never the password. */
  passwordHash: string;
  /** Set for a password someone else chose (the first start's one-time password). */
  mustChangePassword?: boolean;
  /**
   * Two-factor (RFC 6238), absent when never enrolled. `sealed`: the secret under AES-256-GCM
   * (people/two-factor.ts), never in clear; `confirmedAt` null while enrolment awaits its first
   * code (not yet asked at sign-in); `lastStep`: the last time step a code was accepted at;
   * `recovery`: the SHA-256 hashes of the recovery codes not yet used (two-factor.ts).
   */
  totp?: { sealed: string; confirmedAt: string | null; lastStep?: number; recovery?: string[] };
  createdAt: string;
}

export type Role = 'owner' | 'admin' | 'member' | 'analyst' | 'auditor';

export interface MemberRecord {
  workspaceId: string;
  userId: string;
  role: Role;
  addedAt: string;
}

export interface SessionRecord {
  userId: string;
  createdAt: string;
  expiresAt: string;
}
