import type { App, Services } from '../app.js';
import { CliFailure, EXIT } from './base-command.js';
import { localRepo } from './repo.js';

/**
 * Opens the store directly (the operator's root of trust), for `--local` commands. Never creates
 * one: a missing store is `store_not_found` (exit 3) naming the directory, and a missing or
 * different master key is refused. `readOnly`: nothing in the data dir is written (the command
 * works on a read-only copy). The app is loaded only here, on first use, and its services are
 * built lazily: a command builds only the services it uses, never loads the modules of the
 * services only the server uses (app.ts, loadServerModules), and a command that talks to the
 * server never loads the app at all.
 */
export async function openLocal(
  dataDir: string | undefined,
  options: { migrate?: boolean; configFile?: string; readOnly?: boolean; store?: string | undefined } = {},
): Promise<App> {
  const [{ createApp }, { createLogger }, { loadSettings }] = await Promise.all([
    import('../app.js'),
    import('../lib/log.js'),
    import('../settings/load.js'),
  ]);
  const settings = loadSettings({
    ...(options.configFile ? { configFile: options.configFile } : {}),
    overrides: { dataDir, storeUrl: options.store },
  });
  return createApp(settings, {
    migrate: options.migrate ?? false,
    create: false,
    readOnly: options.readOnly ?? false,
    log: createLogger('warn'),
    lazy: true,
  });
}

/** Runs `fn` on the store of `--data-dir`, in its one workspace or the one `--workspace` names, and closes it. */
export async function withLocal<T>(
  flags: { 'data-dir'?: string | undefined; store?: string | undefined; workspace?: string | undefined },
  fn: (services: Services, workspaceId: string) => Promise<T> | T,
  options: { readOnly?: boolean } = {},
): Promise<T> {
  const app = await openLocal(flags['data-dir'], { ...options, store: flags.store });
  try {
    return await fn(app.services, await pickWorkspace(app, flags.workspace));
  } finally {
    await app.close();
  }
}

/** The one workspace of the store, or the one named; a store with several needs --workspace. */
export async function pickWorkspace(app: App, wanted: string | undefined): Promise<string> {
  const all = await localRepo(app.store).workspaceIds();
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
