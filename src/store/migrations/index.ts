import type { Tables } from '../types.js';
import { m001Initial } from './001-initial.js';
import { m002UserWorkspaces } from './002-user-workspaces.js';
import { m003SessionsByUser } from './003-sessions-by-user.js';
import { m004Gate } from './004-gate.js';

/**
 * Ordered, numbered migrations. Each runs inside one store transaction together with the
 * version bump, so a crash leaves the store at the old or the new version, never between.
 * Each is idempotent: re-running it over its own output changes nothing.
 */
export interface Migration {
  version: number;
  description: string;
  /**
   * The step, on LMDB or PostgreSQL alike: run by migrate.ts inside one write with the version
   * bump. Like any write function it may run more than once, so it only reads and writes `tx`;
   * the time comes from the runner (`now`).
   */
  apply(tx: Tables, context: { now: string }): Promise<void>;
}

export const migrations: readonly Migration[] = [m001Initial, m002UserWorkspaces, m003SessionsByUser, m004Gate];

export const CURRENT_SCHEMA_VERSION = migrations[migrations.length - 1]!.version;
