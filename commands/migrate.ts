import { Flags } from '@oclif/core';
import { dataDirFlag, SvcCommand, storeFlag } from '../src/cli/base-command.js';
import { loadSettings } from '../src/settings/load.js';
import { migrateStore, openStore, type MigrationResult } from '../src/store/index.js';

export default class Migrate extends SvcCommand {
  static override summary = "Bring the store's schema to the current version.";
  static override description =
    'Safe to re-run; each migration is one transaction and never loses a record. Back up first with `svc backup`.';
  static override examples = [
    '<%= config.bin %> migrate --data-dir ./data',
    '<%= config.bin %> migrate --dry-run --json',
  ];
  static override flags = {
    'data-dir': dataDirFlag,
    store: storeFlag,
    'dry-run': Flags.boolean({ description: 'print what would run and change nothing' }),
  };

  async run(): Promise<MigrationResult> {
    const { flags } = await this.parse(Migrate);
    const settings = loadSettings({ overrides: { dataDir: flags['data-dir'], storeUrl: flags.store } });
    // Never creates a store; a dry run writes nothing, not even LMDB's lock file.
    const store = await openStore(settings.dataDir, {
      create: false,
      readOnly: flags['dry-run'],
      url: settings.storeUrl ?? undefined,
    });
    try {
      const result = await migrateStore(store, { dryRun: flags['dry-run'] });
      const verb = result.dryRun ? 'would migrate' : 'migrated';
      this.log(
        result.applied.length === 0
          ? `schema version ${result.from}: up to date`
          : `${verb} schema version ${result.from} -> ${result.to}`,
      );
      for (const m of result.applied) this.log(`  ${m.version}: ${m.description}`);
      return result;
    } finally {
      await store.close();
    }
  }
}
