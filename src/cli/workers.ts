import cluster, { type Worker } from 'node:cluster';
import { once } from 'node:events';
import { endNow } from '../lib/hard-exit.js';
import type { Logger } from '../lib/log.js';
import type { Listening } from './serving.js';

/**
 * `svc serve --workers N`: N processes over one store behind one listening port (Node's cluster
 * module: the primary holds the port and hands connections to the workers in turn).
 *
 * Rules it keeps:
 * - The primary serves nothing and never opens the store; each worker is a whole `svc serve`
 *   (store, migrations, first-start owner, HTTP server). Everything that must hold across workers
 *   is in the store (see docs/operations.md, "Past one machine"), exactly as across instances.
 * - The operator is told once: the primary announces (address, metrics, the one-time owner
 *   password) when every worker listens; the one worker whose first start created the owner
 *   reports it (people.createWorkspace with firstOnly lets one of racing workers create it).
 * - A worker that fails before all listen stops the start: every worker is stopped and the
 *   command exits with that worker's exit code (3: store unreachable, port in use). Once serving,
 *   a worker that dies (a crash, kill -9) is replaced; the others keep serving meanwhile.
 * - SIGTERM or SIGINT to the primary: each worker drains (finishes in-flight requests, flushes,
 *   closes the store); the primary exits once all have.
 */

interface ListeningMessage {
  svc: 'listening';
  listening: Listening;
}

const isListening = (m: unknown): m is ListeningMessage =>
  typeof m === 'object' && m !== null && (m as { svc?: unknown }).svc === 'listening';

export const inWorker = (): boolean => cluster.isWorker;

/** In a worker: tells the primary this worker listens (instead of announcing itself). */
export function reportListening(listening: Listening): void {
  const message: ListeningMessage = { svc: 'listening', listening };
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

/** A worker ended before the server was up: the start fails with its exit code. */
export class WorkerStartFailed extends Error {
  override readonly name = 'WorkerStartFailed';
  readonly exitCode: number;
  constructor(exitCode: number) {
    super(`a worker exited with code ${exitCode} before the server listened (its error is shown above)`);
    this.exitCode = exitCode;
  }
}

/** Runs the primary until SIGTERM or SIGINT, once every worker has drained. */
export async function runPrimary(
  workers: number,
  options: { announce: (listening: Listening) => void; log: Logger; shutdownTimeoutMs: number },
): Promise<void> {
  const { log } = options;
  // A worker gets its drain's timeout and this much more to exit before it is killed: what it
  // acknowledged is already on disk, and a stop must end.
  const exitBound = options.shutdownTimeoutMs + 5000;
  const listening = new Map<number, Listening>();
  let up = false;
  let stopping = false;
  const signal = Promise.race([once(process, 'SIGTERM'), once(process, 'SIGINT')]);

  const started = new Promise<void>((resolve, reject) => {
    cluster.on('message', (worker: Worker, message: unknown) => {
      if (!isListening(message) || up) return;
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
      cluster.fork();
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
