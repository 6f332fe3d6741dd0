/**
 * How a serving process ends when an orderly end cannot be trusted to finish.
 *
 * lmdb-js runs write transactions on a libuv thread-pool thread that, mid-transaction, waits for
 * the main thread (lmdb-js issue 336). Node's exit, `process.exit()` as well as the exit after an
 * uncaught exception, joins the thread pool first: with a write in flight that join never returns,
 * and the process keeps its port while answering nothing, until someone sends it SIGKILL. No timer
 * can help once the exit has begun, and a stop can hang before it (a store whose writes wait for
 * a lock another process holds). So the end that cannot hang is SIGKILL sent to the process itself:
 * the kernel ends it at once, joining no thread. LMDB keeps every commit through it, and nothing the
 * process had not acknowledged was promised to anyone. Not `process.abort()`: as certain, but it
 * writes a core dump of a process that holds keys and secrets.
 */

/** Ends this process now, hard (see above). */
export function endNow(): void {
  process.kill(process.pid, 'SIGKILL');
}

/**
 * Bounds an ending already under way: if the process still runs `ms` from now, `late` is told (to
 * log why) and the process ends hard. The timer is unref'd, so it never keeps a process alive that
 * has nothing else to do.
 */
export function endWithin(ms: number, late: () => void = () => undefined): void {
  setTimeout(() => {
    try {
      late();
    } finally {
      endNow();
    }
  }, ms).unref();
}
