import { pino, type Logger } from 'pino';

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

/**
 * JSON lines on stderr. Writes are buffered (4 KiB, flushed at least every 200 ms and at
 * shutdown): one write per request would cost a quarter of a small request's time. A hard
 * crash can lose the last 200 ms of lines, never a stored record. Any other destination (a
 * test's capture) gets each line as it is written.
 */
export function createLogger(level: string, destination: NodeJS.WritableStream = process.stderr): Logger {
  const options = { level, base: { svc: 'svc' }, redact: { paths: redactPaths, censor: '[redacted]' } };
  if (destination !== process.stdout && destination !== process.stderr) return pino(options, destination);
  const dest = pino.destination({ dest: destination === process.stdout ? 1 : 2, sync: false, minLength: 4096 });
  if (level !== 'silent') setInterval(() => dest.flush(), 200).unref();
  return pino(options, dest);
}
