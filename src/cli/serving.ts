import { once } from 'node:events';
import { createApp } from '../app.js';
import { systemError } from '../errors/system.js';
import { endNow, endWithin } from '../lib/hard-exit.js';
import { createLogger, flushLogSync, prettyFormatter, prettyLogs, type Logger } from '../lib/log.js';
import { bootstrapIfEmpty } from '../people/index.js';
import { createHttpServer } from '../server.js';
import type { Settings } from '../settings/schema.js';
import { endWithPrimary, inWorker, leaveCluster, portFromPrimary, reportListening, runPrimary } from './workers.js';

/** What `svc serve` tells once it listens. */
export interface Listening {
  address: string;
  metricsUrl: string | null;
  /** The first workspace and its owner's one-time password, when this start created them. */
  boot: { workspaceId: string; email: string; password: string } | null;
}

/**
 * `svc serve`: the store opened (created when empty), the port bound before the first workspace
 * is created (a start that cannot listen leaves no workspace whose one-time password nobody saw;
 * the next start creates it and prints it), the signals listened for before the address is told.
 * `announce` prints what the operator must see, before the log says `listening` (ready). Resolves
 * on SIGTERM or SIGINT, once the server has drained, flushed and closed the store.
 */
export async function serveUntilStopped(
  settings: Readonly<Settings>,
  options: { migrate: boolean; announce: (listening: Listening) => void },
): Promise<void> {
  const log = createLogger(settings.log.level, {
    pretty: prettyLogs(settings.log.format, process.stderr.isTTY) ? await prettyFormatter() : undefined,
  });
  // --workers N: this process becomes the cluster's primary; each worker runs the rest of this
  // function (workers.ts).
  if (settings.server.workers > 1 && !inWorker()) {
    await runPrimary(settings.server.workers, {
      announce: options.announce,
      log,
      shutdownTimeoutMs: settings.server.shutdownTimeoutMs,
      host: settings.server.host,
      port: settings.server.port,
    });
    return;
  }
  if (inWorker()) endWithPrimary();
  endOnFatal(log);
  const app = await createApp(settings, { migrate: options.migrate, create: true, log });
  if (app.migration) log.info({ from: app.migration.from, to: app.migration.to }, 'store migrated');
  // A worker binds the port the primary names, beside the other workers (workers.ts).
  const http = await createHttpServer(app, inWorker() ? { port: await portFromPrimary(), reusePort: true } : {});
  try {
    await http.start();
  } catch (err) {
    // What the failed start set up (hapi's initialised plugins, their timers) is stopped too.
    await http.server.stop({ timeout: 0 }).catch(() => undefined);
    await app.close();
    throw systemError(err, { kind: 'listen', host: settings.server.host, port: settings.server.port }) ?? err;
  }
  const boot = await bootstrapIfEmpty(app.services.people);
  const address = http.server.info.uri;
  // Listened for before anything says the server is up: a SIGTERM sent the moment a supervisor
  // (or a test) reads the address must drain, not meet the default action and end the process.
  const signal = Promise.race([once(process, 'SIGTERM'), once(process, 'SIGINT')]);
  const listening = { address, metricsUrl: http.metricsUrl(), boot };
  if (inWorker()) reportListening(listening, http.server.info.port as number);
  else options.announce(listening);
  log.info({ address }, 'listening');
  log.flush();
  const [name] = await signal;
  log.info({ signal: String(name ?? '') }, 'stopping: finishing in-flight requests');
  const boundMs = settings.server.shutdownTimeoutMs + STOP_MARGIN_MS;
  endWithin(boundMs, () => {
    log.error({ boundMs }, 'the stop did not finish in time; ending the process hard');
    flushLogSync(log);
  });
  await http.stop();
  await app.close();
  log.info('stopped');
  log.flush();
  // A worker's IPC channel to the primary would keep it alive now that everything is closed and
  // flushed: it leaves, and the primary, waiting for every worker's exit, ends too.
  if (inWorker()) leaveCluster();
}

/**
 * What a stop may take beyond the drain's timeout (`server.shutdownTimeoutMs`): stopping hapi and
 * the background services, flushing and closing the store. Past it the process ends hard
 * (hard-exit.ts), and so frees its port. Less than the 5 s a cluster's primary gives a worker
 * beyond the same timeout before it kills it (workers.ts), so the worker's own bound comes first.
 */
const STOP_MARGIN_MS = 2000;

/**
 * An uncaught exception or unhandled rejection leaves the process in a state nobody planned: it
 * is logged, and the process ends at once and hard (hard-exit.ts), never an exit that can wait
 * forever on the store's write thread while it holds the port. LMDB keeps every acknowledged write
 * through that; a supervisor (systemd, a cluster's primary) starts a new process.
 */
function endOnFatal(log: Logger): void {
  const fatal = (err: unknown, origin: string) => {
    try {
      log.fatal({ err, origin }, 'fatal error; ending the process');
      flushLogSync(log);
    } finally {
      endNow();
    }
  };
  process.on('uncaughtException', (err, origin) => fatal(err, origin));
  process.on('unhandledRejection', (reason) => fatal(reason, 'unhandledRejection'));
}
