import { StoreError } from './errors.js';
import type { KvStore } from './kv.js';
import { openKvLmdbStore } from './kv-lmdb.js';
import { openKvPostgresStore } from './kv-postgres.js';

/**
 * Opens the store a `--store` URL (or SVC_STORE_URL) names (API.md 9): absent or `lmdb:` is the
 * LMDB file under the data dir; `postgres://user:pass@host:port/db` or `postgresql://…` is
 * PostgreSQL. Anything else is refused with a message that never repeats the URL (it may hold a
 * password).
 */
export async function openKvStore(options: { dataDir: string; url?: string | undefined }): Promise<KvStore> {
  const url = options.url?.trim() ?? '';
  if (url === '' || url === 'lmdb:') return openKvLmdbStore(options.dataDir);
  if (/^postgres(ql)?:\/\//i.test(url)) return openKvPostgresStore(url);
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0] ?? 'that value';
  throw new StoreError(
    'cannot_open',
    `unknown store ${scheme}: use lmdb: (the file under the data dir) or postgres://user:password@host:port/database`,
  );
}
