/**
 * The store's public surface: open it, migrate it, and the types the domains' repos use.
 *
 * types.ts: the interface the domains see and its invariants; open.ts: that interface over either
 * backend, with the transaction ambient to a write function; kv.ts: what a backend implements;
 * kv-lmdb.ts: the LMDB backend and why it validates optimistically; kv-postgres.ts: the PostgreSQL
 * backend; tables.ts: the table registry, one object; tuple-key.ts: the order-preserving key
 * encoding; migrate.ts with migrations/: the numbered schema steps every backend shares.
 */
export { openStore, openBackend, ambientStore, type OpenOptions } from './open.js';
export { STORE_FILE, storeNotFound } from './kv-lmdb.js';
export { migrateStore, ensureSchema, newerSchema, type MigrationResult } from './migrate.js';
export { CURRENT_SCHEMA_VERSION } from './migrations/index.js';
export { StoreError } from './errors.js';
export { counterKey, memoryCounters, type WindowCounters } from './counters.js';
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
export type { Store, Table, Tables, Key, KeyPart, ScanOptions, MetaValue, WriteOptions } from './types.js';
export type { TableName, TableValue } from './tables.js';
