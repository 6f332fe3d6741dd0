import cluster, { type Worker } from 'node:cluster';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { systemError } from '../errors/system.js';
import { endNow } from '../lib/hard-exit.js';
import type { Logger } from '../lib/log.js';
import type { Listening } from './serving.js';

/**
 * `svc serve --workers N`: N processes over one store on one port. Each worker listens on the port
 * itself (SO_REUSEPORT: Linux spreads new connections over the workers' sockets); the primary holds
 * no socket. So a worker that dies takes only the connections it had accepted (their clients see a
 * connection error), no connection waits in a primary for a worker, and while one worker lives the
 * port accepts.
 *
 * Rules it keeps:
 * - The primary serves nothing and never opens the store; each worker is a whole `svc serve`
 *   (store, migrations, first-start owner, HTTP server). Everything that must hold across workers
 *   is in the store (see docs/operations.md, "Past one machine"), exactly as across instances.
 * - The port: the configured one; with port 0 the first worker to ask binds a free port and the
 *   others (and every replacement) are told the one it got.
 * - The operator is told once: the primary announces (address, metrics, the one-time owner
 *   password) when every worker listens; the one worker whose first start created the owner
 *   reports it (people.createWorkspace with firstOnly lets one of racing workers create it).
 * - A worker that fails before all listen stops the start: every worker is stopped and the
 *   command exits with that worker's exit code (3: store unreachable, port in use). Once serving,
 *   a worker that dies (a crash, kill -9) is replaced at once; one that dies again before it
 *   listens is replaced after a pause that doubles (0.1 s up to 5 s). The others keep serving.
 * - SIGTERM or SIGINT to the primary: each worker drains (finishes in-flight requests, flushes,
 *   closes the store); the primary exits once all have.
 */

interface ListeningMessage {
  svc: 'listening';
  listening: Listening;
  port: number;
}

const isListening = (m: unknown): m is ListeningMessage =>
  typeof m === 'object' && m !== null && (m as { svc?: unknown }).svc === 'listening';
const isPortQuestion = (m: unknown): boolean =>
  typeof m === 'object' && m !== null && (m as { svc?: unknown }).svc === 'port?';
const portAnswer = (m: unknown): number | null =>
  typeof m === 'object' && m !== null && (m as { svc?: unknown }).svc === 'port'
    ? Number((m as { port?: unknown }).port)
    : null;

export const inWorker = (): boolean => cluster.isWorker;

/** In a worker: the port to listen on, from the primary (0: bind a free one, the others will follow). */
export async function portFromPrimary(): Promise<number> {
  const answered = new Promise<number>((resolve) => {
    const onMessage = (m: unknown) => {
      const port = portAnswer(m);
      if (port === null) return;
      process.off('message', onMessage);
      resolve(port);
    };
    process.on('message', onMessage);
  });
  process.send?.({ svc: 'port?' });
  return answered;
}

/** In a worker: tells the primary this worker listens on `port` (instead of announcing itself). */
export function reportListening(listening: Listening, port: number): void {
  const message: ListeningMessage = { svc: 'listening', listening, port };
  process.send?.(message);
}

/**
 * In a worker: when the primary is gone without a stop (kill -9, the OOM killer), the worker ends
 * too, whatever it was doing. Node's cluster module calls process.exit() on that disconnect, and
 * process.exit() while an LMDB write waits for its JavaScript callback never returns (Node joins
 * the thread pool, whose LMDB write thread waits for the main thread: lmdb-js issue 336), leaving
 * an orphan that holds the store and its output. A worker whose primary is gone therefore ends
 * with SIGKILL at its exit: LMDB keeps every committed write through a kill -9, and what the worker
 * had not acknowledged its client never saw acknowledged.
 */
export function endWithPrimary(): void {
  let primaryGone = false;
  // Before the cluster module's own listener, which exits.
  process.prependOnceListener('disconnect', () => {
    if (!cluster.worker?.exitedAfterDisconnect) primaryGone = true;
  });
  process.on('exit', () => {
    if (primaryGone) endNow();
  });
}

/** In a worker whose server has stopped (drained, flushed, store closed): exits at once. */
export function leaveCluster(): void {
  process.exit(0);
}

const RESTART_PAUSE_MS = 100;
const RESTART_PAUSE_MAX_MS = 5000;

/** A worker ended before the server was up: the start fails with its exit code. */
export class WorkerStartFailed extends Error {
  override readonly name = 'WorkerStartFailed';
  readonly exitCode: number;
  constructor(exitCode: number) {
    super(`a worker exited with code ${exitCode} before the server listened (its error is shown above)`);
    this.exitCode = exitCode;
  }
}

/**
 * Refuses a port another process serves, with SO_REUSEPORT or without: the workers bind it with
 * SO_REUSEPORT, which would otherwise let them join another server's group on that port (a second
 * `svc serve --workers` on another data dir, taking a share of its connections) instead of failing.
 * A socket bound here without the option fails while any other socket holds the port; it is closed
 * before the workers start.
 */
async function portFree(host: string, port: number): Promise<void> {
  const probe = createServer();
  try {
    probe.listen({ host, port, exclusive: true });
    await once(probe, 'listening');
  } catch (err) {
    throw systemError(err, { kind: 'listen', host, port }) ?? err;
  } finally {
    await new Promise<void>((resolve) => probe.close(() => resolve()));
  }
}

/** Runs the primary until SIGTERM or SIGINT, once every worker has drained. */
export async function runPrimary(
  workers: number,
  options: {
    announce: (listening: Listening) => void;
    log: Logger;
    shutdownTimeoutMs: number;
    host: string;
    port: number;
  },
): Promise<void> {
  const { log } = options;
  if (options.port !== 0) await portFree(options.host, options.port);
  // A worker gets its drain's timeout and this much more to exit before it is killed: what it
  // acknowledged is already on disk, and a stop must end.
  const exitBound = options.shutdownTimeoutMs + 5000;
  const listening = new Map<number, Listening>();
  let up = false;
  let stopping = false;
  const signal = Promise.race([once(process, 'SIGTERM'), once(process, 'SIGINT')]);

  // The port every worker binds: with 0, the one the first worker to ask got; meanwhile the others wait.
  let port: number | null = options.port === 0 ? null : options.port;
  let choosing = false;
  const waiting: Worker[] = [];
  const tell = (worker: Worker, value: number) => {
    if (worker.isConnected()) worker.send({ svc: 'port', port: value });
  };
  // Replacing a worker: at once for one that had listened; after a pause that doubles for one that
  // died again before it listened (a start that keeps failing does not spin).
  const listened = new Set<number>();
  let pause = 0;
  let replacing: NodeJS.Timeout | undefined;
  const replace = (hadListened: boolean) => {
    pause = hadListened ? 0 : Math.min(RESTART_PAUSE_MAX_MS, Math.max(RESTART_PAUSE_MS, pause * 2));
    if (pause === 0) cluster.fork();
    else
      replacing = setTimeout(() => {
        if (!stopping) cluster.fork();
      }, pause);
  };

  const started = new Promise<void>((resolve, reject) => {
    cluster.on('message', (worker: Worker, message: unknown) => {
      if (isPortQuestion(message)) {
        if (port !== null) tell(worker, port);
        else if (!choosing) {
          choosing = true;
          tell(worker, 0);
        } else waiting.push(worker);
        return;
      }
      if (!isListening(message)) return;
      listened.add(worker.id);
      if (port === null) {
        port = message.port;
        for (const other of waiting.splice(0)) tell(other, message.port);
      }
      if (up) return;
      listening.set(worker.id, message.listening);
      if (listening.size < workers) return;
      up = true;
      const reports = [...listening.values()];
      const boot = reports.find((r) => r.boot !== null)?.boot ?? null;
      resolve();
      options.announce({ ...reports[0]!, boot });
      log.info({ address: reports[0]!.address, workers }, 'listening');
      log.flush();
    });
    cluster.on('exit', (worker: Worker, code: number | null, sig: string | null) => {
      if (stopping) return;
      if (!up) {
        stopping = true;
        for (const other of Object.values(cluster.workers ?? {})) other?.process.kill('SIGTERM');
        reject(new WorkerStartFailed(code ?? 1));
        return;
      }
      log.warn({ pid: worker.process.pid, code, signal: sig }, 'a worker exited; starting another');
      replace(listened.delete(worker.id));
    });
  });
  for (let i = 0; i < workers; i++) cluster.fork();
  try {
    await Promise.race([started, signal.then(() => undefined)]);
  } catch (err) {
    // A worker failed to start: the others are stopping; wait for them, then fail.
    await stopAll();
    throw err;
  }
  if (!up) {
    // Stopped before every worker listened.
    stopping = true;
    started.catch(() => undefined);
    await stopAll();
    return;
  }
  const [name] = await signal;
  stopping = true;
  clearTimeout(replacing);
  log.info({ signal: String(name ?? '') }, 'stopping: every worker finishes its in-flight requests');
  await stopAll();
  log.info('stopped');
  log.flush();

  async function stopAll(): Promise<void> {
    const alive = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && !w.isDead());
    await Promise.all(
      alive.map(async (worker) => {
        const exited = once(worker, 'exit');
        worker.process.kill('SIGTERM');
        const late = setTimeout(() => {
          log.warn({ pid: worker.process.pid }, 'a worker did not exit in time after SIGTERM; killing it');
          worker.process.kill('SIGKILL');
        }, exitBound);
        await exited;
        clearTimeout(late);
      }),
    );
  }
}
