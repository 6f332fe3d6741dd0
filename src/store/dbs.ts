import type { Table } from './types.js';

/**
 * Every sub-database of the store and its key layout. Ids are the prefixed ids of API.md.
 * A record's shape is owned by its domain (people/, keys/, ...); the store sees only values.
 */

export interface MetaValue { [k: string]: unknown }

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

export interface AgentRecord {
  id: string;
  workspaceId: string;
  name: string;
  actsFor: string | null;
  tags: string[];
  createdAt: string;
  removedAt: string | null;
}

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
  /** SHA-256 of the key value (base64url). */
  hash: string;
  createdAt: string;
  createdBy: string;
  revokedAt: string | null;
}

export type ServiceTokenScope = 'agents:read' | 'agents:write' | 'agents:freeze' | 'approvals:read' | 'evidence:read';

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

export interface Tables {
  /** 'schemaVersion' -> number; other store-wide values. */
  meta: Table<unknown>;
  /** wid -> workspace */
  workspaces: Table<WorkspaceRecord>;
  /** uid -> user */
  users: Table<UserRecord>;
  /** lower-cased email -> uid */
  usersByEmail: Table<string>;
  /** [wid, uid] -> membership */
  members: Table<MemberRecord>;
  /** [uid, wid] -> role; the reverse of members (schema 2) */
  userWorkspaces: Table<Role>;
  /** session secret hash -> session */
  sessions: Table<SessionRecord>;
  /** [uid, session hash] -> expiresAt; a person's sessions, to end them together (schema 3) */
  sessionsByUser: Table<string>;
  /** [wid, aid] -> agent */
  agents: Table<AgentRecord>;
  /** [wid, keyId] -> key record (workspace and agent keys) */
  keys: Table<KeyRecord>;
  /** key hash -> the key record itself (a copy kept in step with `keys` in every write), so that
   * authenticating a key is one read */
  keysByHash: Table<KeyRecord>;
  /** [wid, tokId] -> service token record */
  serviceTokens: Table<ServiceTokenRecord>;
  /** token hash -> [wid, tokId] */
  serviceTokensByHash: Table<[string, string]>;
}

export const tableNames = [
  'meta', 'workspaces', 'users', 'usersByEmail', 'members', 'userWorkspaces', 'sessions', 'sessionsByUser',
  'agents', 'keys', 'keysByHash', 'serviceTokens', 'serviceTokensByHash',
] as const satisfies ReadonlyArray<keyof Tables>;
