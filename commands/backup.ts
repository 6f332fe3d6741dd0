import { chmodSync, existsSync } from 'node:fs';
import { Flags } from '@oclif/core';
import { dataDirFlag, EXIT, SvcCommand, storeFlag } from '../src/cli/base-command.js';
import { loadSettings } from '../src/settings/load.js';
import { openStore, STORE_FILE } from '../src/store/index.js';

export default class Backup extends SvcCommand {
  static override summary = 'Write a consistent copy of the store, safe while the server runs.';
  static override description = `Restore by placing the copy as ${STORE_FILE} in an empty data dir, beside the same master.key (or with the same SVC_MASTER_KEY): secrets in the store are sealed with it.`;
  static override examples = ['<%= config.bin %> backup --data-dir ./data --out /backups/svc-2026-11-22.mdb'];
  static override flags = {
    'data-dir': dataDirFlag,
    store: storeFlag,
    out: Flags.string({ description: 'file to write; must not exist', required: true }),
  };

  async run(): Promise<{ out: string; schemaVersion: number }> {
    const { flags } = await this.parse(Backup);
    if (existsSync(flags.out))
      this.fail(
        `${flags.out} already exists; choose a new file`,
        EXIT.usage,
        'invalid_request',
        'Name a file that does not exist yet with --out; a backup never overwrites one.',
      );
    const settings = loadSettings({ overrides: { dataDir: flags['data-dir'], storeUrl: flags.store } });
    if (settings.storeUrl !== null && /^postgres(ql)?:/i.test(settings.storeUrl))
      this.fail(
        'svc backup copies the LMDB file; this store is in PostgreSQL: back it up with pg_dump (for example `pg_dump -Fc -d DATABASE > svc.dump`) and keep master.key with the dump',
        EXIT.usage,
        'invalid_request',
      );
    // Read-only: a missing store is store_not_found (exit 3), and a read-only mount can be copied.
    const store = await openStore(settings.dataDir, { create: false, readOnly: true });
    try {
      // The copy holds what the store holds (hashes, sealed secrets): private from its first byte.
      const previous = process.umask(0o077);
      try {
        await this.progress('Copying the store', () => store.backup(flags.out));
      } finally {
        process.umask(previous);
      }
      chmodSync(flags.out, 0o600);
      const schemaVersion = await store.schemaVersion();
      this.log(`store (schema ${schemaVersion}) copied to ${flags.out}; keep master.key with it`);
      return { out: flags.out, schemaVersion };
    } finally {
      await store.close();
    }
  }
}
