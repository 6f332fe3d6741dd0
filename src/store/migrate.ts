import { StoreError } from './errors.js';
import { CURRENT_SCHEMA_VERSION, migrations } from './migrations/index.js';
import type { Store } from './types.js';

export interface MigrationResult {
  from: number;
  /** The version after the migration (after a dry run, the version it would reach). */
  to: number;
  applied: Array<{ version: number; description: string }>;
  dryRun: boolean;
}

/**
 * Brings the store to the current schema (or `target`), one migration per write together with its
 * version bump, in order (an empty store: all of them in one write): a crash leaves the store at
 * the old version or the new one. LMDB and
 * PostgreSQL share the one numbered sequence (migrations/). The write re-reads the version first,
 * so two processes migrating at once (or a retried write) apply each step once.
 */
export async function migrateStore(
  store: Pick<Store, 'write' | 'schemaVersion'>,
  options: { dryRun?: boolean; target?: number; now?: () => Date } = {},
): Promise<MigrationResult> {
  const from = await store.schemaVersion();
  const target = options.target ?? CURRENT_SCHEMA_VERSION;
  if (from > CURRENT_SCHEMA_VERSION) throw newerSchema(from);
  const pending = migrations.filter((m) => m.version > from && m.version <= target);
  if (!options.dryRun) {
    // An empty store is set up in ONE write: processes starting together on a new store (the
    // workers of `svc serve --workers`, instances on a new database) see it empty or whole, never
    // half-migrated (which would read as an older schema and be refused).
    const steps = from === 0 ? [pending] : pending.map((m) => [m]);
    for (const step of steps) {
      const now = (options.now?.() ?? new Date()).toISOString();
      await store.write(async (tx) => {
        const at = await tx.meta.get('schemaVersion');
        for (const migration of step) {
          if (typeof at === 'number' && at >= migration.version) continue;
          await migration.apply(tx, { now });
          await tx.meta.put('schemaVersion', migration.version);
        }
      });
    }
  }
  return {
    from,
    // The version the store is at afterwards: for a dry run, the one it would be at.
    to: Math.max(from, ...pending.map((m) => m.version)),
    applied: pending.map(({ version, description }) => ({ version, description })),
    dryRun: options.dryRun ?? false,
  };
}

export function newerSchema(found: number): StoreError {
  return new StoreError(
    'newer_schema',
    `the store has schema version ${found}, newer than this svc understands (${CURRENT_SCHEMA_VERSION}); run a newer svc, or restore a backup made for this one`,
  );
}

/**
 * The check made when the server opens the store: a newer schema is refused; an older one asks
 * for `svc migrate` unless migration was requested; an empty store is always set up.
 */
export async function ensureSchema(
  store: Pick<Store, 'write' | 'schemaVersion' | 'backend'>,
  options: { migrate: boolean },
): Promise<MigrationResult | null> {
  const found = await store.schemaVersion();
  if (found > CURRENT_SCHEMA_VERSION) throw newerSchema(found);
  if (found === CURRENT_SCHEMA_VERSION) return null;
  if (found > 0 && !options.migrate) {
    const backup = store.backend === 'postgres' ? 'pg_dump' : '`svc backup`';
    throw new StoreError(
      'older_schema',
      `the store has schema version ${found}; this svc needs ${CURRENT_SCHEMA_VERSION}. Run \`svc migrate\` (back up first with ${backup}), or start with --migrate`,
    );
  }
  return migrateStore(store);
}
