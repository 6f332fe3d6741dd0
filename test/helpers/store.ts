import { createApp, type App } from '../../src/app.js';
import { systemClock, type Clock } from '../../src/lib/clock.js';
import { createLogger } from '../../src/lib/log.js';
import { loadSettings } from '../../src/settings/load.js';
import { storeUrlFor } from './postgres.js';

/** The apps of the servers serving in this process (serveInProcess), by data dir. */
export const servingApps = new Map<string, App>();

/**
 * Opens the same LMDB store a running server uses (LMDB is multi-process), to set up records
 * the foundation has no route for yet (agents, members, service tokens) or to inspect state.
 * A server serving in this process lends its own app (unless another clock is asked for).
 */
export async function withStore<T>(
  dataDir: string,
  fn: (app: App) => Promise<T> | T,
  options: { clock?: Clock; overrides?: Record<string, unknown> } = {},
): Promise<T> {
  const serving = options.clock || options.overrides ? undefined : servingApps.get(dataDir);
  if (serving) return fn(serving);
  const storeUrl = (await storeUrlFor(dataDir)) ?? null;
  const settings = loadSettings({ env: {}, overrides: { dataDir, storeUrl, ...options.overrides } });
  const app = await createApp(settings, {
    migrate: true,
    log: createLogger('silent'),
    clock: options.clock ?? systemClock,
  });
  try {
    return await fn(app);
  } finally {
    await app.close();
  }
}

/** A clock fixed at a given time, for records that must look old (expired tokens). */
export function fixedClock(ms: number): Clock {
  return { now: () => ms };
}
