/** The store's public surface: open it, migrate it, and the types the domain's repos use. */
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
