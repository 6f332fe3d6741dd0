import { StoreError } from './errors.js';
import type { KvStore } from './kv.js';
import { newerSchema, type MigrationResult } from './migrate.js';
import { CURRENT_SCHEMA_VERSION, migrations } from './migrations/index.js';

/**
 * The migration runner and schema check of the asynchronous interface, beside today's (migrate.ts)
 * and with the same numbered migrations (migrations/, each through its `apply`), so LMDB and
 * PostgreSQL stores share one schema sequence. Each migration runs in one write together with its
 * version bump: a crash leaves the store at the old version or the new one. The write re-reads the
 * version first, so two processes migrating at once (or a retried write) apply each step once.
 */
export async function migrateKvStore(
  store: KvStore,
  options: { dryRun?: boolean; target?: number; now?: () => Date } = {},
): Promise<MigrationResult> {
  const from = await store.schemaVersion();
  const target = options.target ?? CURRENT_SCHEMA_VERSION;
  if (from > CURRENT_SCHEMA_VERSION) throw newerSchema(from);
  const pending = migrations.filter((m) => m.version > from && m.version <= target);
  if (!options.dryRun) {
    for (const migration of pending) {
      const now = (options.now?.() ?? new Date()).toISOString();
      await store.write(async (tx) => {
        const at = await tx.meta.get('schemaVersion');
        if (typeof at === 'number' && at >= migration.version) return;
        await migration.apply(tx, { now });
        await tx.meta.put('schemaVersion', migration.version);
      });
    }
  }
  return {
    from,
    to: options.dryRun ? from : Math.max(from, ...pending.map((m) => m.version)),
    applied: pending.map(({ version, description }) => ({ version, description })),
    dryRun: options.dryRun ?? false,
  };
}

/**
 * The check made when the server opens the store (as ensureSchema): a newer schema is refused; an
 * older one asks for `svc migrate` unless migration was requested; an empty store is set up.
 */
export async function ensureKvSchema(store: KvStore, options: { migrate: boolean }): Promise<MigrationResult | null> {
  const found = await store.schemaVersion();
  if (found > CURRENT_SCHEMA_VERSION) throw newerSchema(found);
  if (found === CURRENT_SCHEMA_VERSION) return null;
  if (found > 0 && !options.migrate) {
    throw new StoreError(
      'older_schema',
      `the store has schema version ${found}; this svc needs ${CURRENT_SCHEMA_VERSION}. Run \`svc migrate\` (back up first with \`svc backup\`, or pg_dump on PostgreSQL), or start with --migrate`,
    );
  }
  return migrateKvStore(store);
}
