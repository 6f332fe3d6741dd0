/**
 * The store's public surface: open it, migrate it, and the types the domain's repos use.
 *
 * Two interfaces live here while the domains move from one to the other: today's synchronous one
 * (types.ts, lmdb.ts, migrate.ts), which the app still opens, and the asynchronous one (kv.ts:
 * its invariants; tables.ts: the table registry, one object; kv-lmdb.ts: the LMDB backend and why
 * it validates optimistically; kv-postgres.ts: the PostgreSQL backend; tuple-key.ts: the
 * order-preserving key encoding; kv-migrate.ts: the same migrations through it; kv-open.ts: which
 * backend a `--store` URL names).
 */
export { openLmdbStore as openStore, STORE_FILE, storeNotFound, type OpenOptions } from './lmdb.js';
export { migrateStore, ensureSchema, newerSchema, type MigrationResult } from './migrate.js';
export { CURRENT_SCHEMA_VERSION } from './migrations/index.js';
export { StoreError } from './errors.js';
export {
  loadMasterKey,
  readMasterKey,
  createMasterKey,
  masterKeyCheck,
  matchesCheck,
  missingKey,
  wrongKey,
  MASTER_KEY_CHECK,
  type MasterKeySource,
} from './master-key.js';
export type { Store, Table, Key, KeyPart, ScanOptions } from './types.js';
export type * from './dbs.js';
