import { pino, type Logger } from 'pino';
import type PinoPretty from 'pino-pretty';

export type { Logger } from 'pino';

/**
 * Paths pino blanks out. Requests are logged from a fixed list of fields (http/pipeline.ts), so
 * these are a second line of defence: no key, token, password, cookie or signature reaches a log
 * line. Exact paths only: wildcard paths cost about 14 µs per line, more than the rest of the
 * line together, on every request.
 */
/** Headers that carry a credential or a signature (ours and the inbound integrations'). */
const SECRET_HEADERS = [
  'authorization',
  'cookie',
  'x-api-key',
  'svc-signature',
  'stripe-signature',
  'x-hub-signature-256',
  'x-hub-signature',
  'x-slack-signature',
];

export const redactPaths = [
  'authorization',
  'cookie',
  'set-cookie',
  'x-api-key',
  'svc-signature',
  'stripe-signature',
  'x-hub-signature-256',
  'x-slack-signature',
  'password',
  'key',
  'token',
  'secret',
  'signature',
  'totp',
  'session',
  'refresh_token',
  'access_token',
  'client_secret',
  'code_verifier',
  ...SECRET_HEADERS.map((h) => `headers["${h}"]`),
  ...SECRET_HEADERS.map((h) => `req.headers["${h}"]`),
  'err.data',
  'err.output.payload',
];

export interface LoggerOptions {
  /** Where the lines go (default stderr). */
  destination?: NodeJS.WritableStream;
  /**
   * Readable lines for a person at a terminal instead of JSON (see prettyLogs): pino-pretty, as
   * `prettyFormatter()` loads it. Only `svc serve` writes such lines, so only it loads the package.
   */
  pretty?: PrettyFormatter | undefined;
}

export type PrettyFormatter = typeof PinoPretty;

/** pino-pretty, for `LoggerOptions.pretty`. */
export async function prettyFormatter(): Promise<PrettyFormatter> {
  return (await import('pino-pretty')).default;
}

/** Whether `svc serve` writes readable lines: `log.format` pretty, or auto on a terminal. */
export function prettyLogs(format: 'auto' | 'json' | 'pretty', isTerminal: boolean | undefined): boolean {
  return format === 'pretty' || (format === 'auto' && isTerminal === true);
}

/**
 * JSON lines on stderr, each with its time in ISO 8601 UTC. Writes are buffered (4 KiB, flushed
 * at least every 200 ms and at shutdown): one write per request would cost a quarter of a small
 * request's time. A hard crash can lose the last 200 ms of lines, never a stored record. Any other
 * destination (a test's capture) gets each line as it is written.
 *
 * `pretty`: the same records, redacted the same way, formatted by pino-pretty as a stream in this
 * thread (never pino's transports: they run in a worker thread, which the single executable
 * cannot start), written synchronously.
 */
export function createLogger(level: string, options: LoggerOptions | NodeJS.WritableStream = {}): Logger {
  const { destination = process.stderr, pretty } = 'write' in options ? { destination: options } : options;
  const fd = destination === process.stdout ? 1 : 2;
  const settings = {
    level,
    base: { svc: 'svc' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: redactPaths, censor: '[redacted]' },
  };
  if (pretty) {
    return pino(
      settings,
      pretty({
        destination: fd,
        sync: true,
        translateTime: 'UTC:yyyy-mm-dd HH:MM:ss.l',
        ignore: 'pid,hostname,svc',
        singleLine: true,
      }),
    );
  }
  if (destination !== process.stdout && destination !== process.stderr) return pino(settings, destination);
  const dest = pino.destination({ dest: fd, sync: false, minLength: 4096 });
  if (level !== 'silent') setInterval(() => dest.flush(), 200).unref();
  return pino(settings, dest);
}

/**
 * Writes what the logger still buffers before this function returns: for the last lines of a
 * process about to end hard (hard-exit.ts), which a buffered or asynchronous write would lose.
 */
export function flushLogSync(log: Logger): void {
  const stream = (log as unknown as Record<symbol, { flushSync?: () => void } | undefined>)[pino.symbols.streamSym];
  try {
    stream?.flushSync?.();
  } catch {
    // A destination that is not ready or already closed: nothing more can be written anyway.
  }
}
