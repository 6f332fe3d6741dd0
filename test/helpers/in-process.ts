import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createApp, type App, type AppOptions } from '../../src/app.js';
import { createHttpServer, type HttpServer } from '../../src/server.js';
import type { Clock } from '../../src/lib/clock.js';
import { createLogger } from '../../src/lib/log.js';
import { bootstrapIfEmpty } from '../../src/people/index.js';
import { loadSettings } from '../../src/settings/load.js';
import { storeUrlFor } from './postgres.js';
import { PATIENT_SERVER, patientConfig, removeDir, tempDir, type Served } from './process.js';
import { servingApps } from './store.js';

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
    loadSettings({
      env,
      overrides: {
        dataDir: dir,
        storeUrl: (await storeUrlFor(dir)) ?? null,
        'server.port': 0,
        'load.sampleIntervalMs': 0,
        ...patientOverrides(undefined),
        ...overrides,
      },
    }),
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

/** A server started by serveInProcess, with its app (store, services, clock) at hand. */
export interface ServedInProcess extends Served {
  app: App;
  http: HttpServer;
  /** The log lines written so far (JSON lines, as `svc serve` writes them to stderr); empty when silent. */
  logs(): string;
}

/**
 * What `svc serve --json --host 127.0.0.1 --port 0` does (settings from `config` and `env` only,
 * never this process's environment; the first-start owner; listening on a free loopback port),
 * in this process, with its log kept in memory (silent unless `logLevel`) and, when given, an
 * injected clock; load shedding off unless `config.load.sampleIntervalMs` asks for it. For route tests whose
 * subject is not the process itself: no spawn, and time moves when the test says so.
 * `stop()` drains like SIGTERM does (in-flight requests finish, last checkpoint, store closed).
 */
export async function serveInProcess(
  options: {
    dataDir?: string;
    env?: Record<string, string | undefined>;
    config?: unknown;
    clock?: Clock;
    logLevel?: string;
    overrides?: Record<string, unknown>;
    /** DNS for workspace-chosen targets and Client ID Metadata Documents (AppOptions.lookup). */
    lookup?: AppOptions['lookup'];
    /** Certificates trusted for Client ID Metadata Documents (AppOptions.clientMetadataCa). */
    clientMetadataCa?: string;
    /** Keep the product's client timeouts (2 s for headers, 10 s for a request), not PATIENT_SERVER's. */
    productTimeouts?: boolean;
  } = {},
): Promise<ServedInProcess> {
  const dataDir = options.dataDir ?? (await tempDir());
  let configFile: string | undefined;
  if (options.config !== undefined) {
    configFile = join(dataDir, '..', `${dataDir.split('/').pop()}-config.json`);
    await writeFile(configFile, JSON.stringify(options.config));
  }
  const settings = loadSettings({
    ...(configFile ? { configFile } : {}),
    env: { ...options.env },
    overrides: {
      dataDir,
      storeUrl: (await storeUrlFor(dataDir)) ?? null,
      'server.host': '127.0.0.1',
      'server.port': 0,
      // The test shares this event loop: load shedding stays off unless the config turns it on.
      ...(sheds(options.config) ? {} : { 'load.sampleIntervalMs': 0 }),
      ...(options.productTimeouts ? {} : patientOverrides(options.config)),
      ...options.overrides,
    },
  });
  let logs = '';
  const capture = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs += chunk.toString();
      done();
    },
  });
  const app = await createApp(settings, {
    log: createLogger(options.logLevel ?? 'silent', capture),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.lookup ? { lookup: options.lookup } : {}),
    ...(options.clientMetadataCa ? { clientMetadataCa: options.clientMetadataCa } : {}),
  });
  const boot = await bootstrapIfEmpty(app.services.people);
  const http = await createHttpServer(app);
  await http.start();
  servingApps.set(dataDir, app);
  const url = http.server.info.uri;
  let stopped: Promise<void> | undefined;
  return {
    url,
    dataDir,
    app,
    http,
    boot: {
      listening: url,
      ...(boot ? { workspaceId: boot.workspaceId, owner: { email: boot.email, password: boot.password } } : {}),
    },
    logs: () => logs,
    stop() {
      stopped ??= (async () => {
        await http.stop();
        servingApps.delete(dataDir);
        await app.close();
      })();
      return stopped;
    },
  };
}

/** The client timeouts patientConfig gives this config, as dotted overrides. */
function patientOverrides(config: unknown): Record<string, unknown> {
  const { server } = patientConfig(config) as { server: Record<string, unknown> };
  return Object.fromEntries(Object.keys(PATIENT_SERVER).map((key) => [`server.${key}`, server[key]]));
}

function sheds(config: unknown): boolean {
  const load = (config as { load?: { sampleIntervalMs?: unknown } } | undefined)?.load;
  return load?.sampleIntervalMs !== undefined;
}
