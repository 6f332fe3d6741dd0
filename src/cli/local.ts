import { createApp, type App } from '../app.js';
import { createLogger } from '../lib/log.js';
import { loadSettings } from '../settings/load.js';
import { CliFailure, EXIT } from './base-command.js';

/**
 * Opens the store directly (the operator's root of trust), for `--local` commands. Never creates
 * one: a missing store is `store_not_found` (exit 3) naming the directory, and a missing or
 * different master key is refused. `readOnly`: nothing in the data dir is written (the command
 * works on a read-only copy).
 */
export async function openLocal(
  dataDir: string | undefined,
  options: { migrate?: boolean; configFile?: string; readOnly?: boolean } = {},
): Promise<App> {
  const settings = loadSettings({
    ...(options.configFile ? { configFile: options.configFile } : {}),
    overrides: { dataDir },
  });
  return createApp(settings, {
    migrate: options.migrate ?? false,
    create: false,
    readOnly: options.readOnly ?? false,
    log: createLogger('warn'),
  });
}

/** The one workspace of the store, or the one named; a store with several needs --workspace. */
export function pickWorkspace(app: App, wanted: string | undefined): string {
  const all = app.store.tables.workspaces.scan([]).map((e) => e.value.id);
  if (wanted) {
    if (!all.includes(wanted))
      throw new CliFailure(`no workspace ${wanted} in this store`, { exit: EXIT.usage, type: 'not_found' });
    return wanted;
  }
  if (all.length === 1) return all[0]!;
  if (all.length === 0)
    throw new CliFailure('the store has no workspace yet', {
      exit: EXIT.usage,
      type: 'not_found',
      fix: 'Run `svc init` or start `svc serve` once.',
    });
  throw new CliFailure(`the store has ${all.length} workspaces`, {
    exit: EXIT.usage,
    type: 'ambiguous_workspace',
    fix: 'Name one with --workspace.',
  });
}
