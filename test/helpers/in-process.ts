import { createApp, type App } from '../../src/app.js';
import { createHttpServer, type HttpServer } from '../../src/server.js';
import { createLogger } from '../../src/lib/log.js';
import { loadSettings } from '../../src/settings/load.js';
import { removeDir, tempDir } from './process.js';

export interface InProcess {
  app: App;
  http: HttpServer;
  dir: string;
  /** Stops the server, closes the store, removes the data dir. */
  close(): Promise<void>;
}

/**
 * The real app and hapi server in this process on a temp store, for server.inject tests (settings
 * as dotted overrides, and an environment of its own, empty unless given; load sampling off unless asked for). Not started: call
 * `http.server.initialize()` or `http.start()`.
 */
export async function inProcessServer(
  overrides: Record<string, unknown> = {},
  env: NodeJS.ProcessEnv = {},
): Promise<InProcess> {
  const dir = await tempDir();
  const app = await createApp(
    loadSettings({ env, overrides: { dataDir: dir, 'server.port': 0, 'load.sampleIntervalMs': 0, ...overrides } }),
    { log: createLogger('silent') },
  );
  const http = await createHttpServer(app);
  return {
    app,
    http,
    dir,
    async close() {
      await http.server.stop();
      await app.close();
      await removeDir(dir);
    },
  };
}
