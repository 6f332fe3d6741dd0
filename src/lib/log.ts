import { pino, type Logger } from 'pino';

export type { Logger } from 'pino';

/**
 * Paths pino blanks out wherever they appear. Requests are logged from a fixed list of fields
 * (see http/request-log.ts), so these are a second line of defence: no key, token, password,
 * cookie or signature reaches a log line.
 */
export const redactPaths = [
  'authorization', '*.authorization', 'headers.authorization', 'req.headers.authorization',
  'cookie', '*.cookie', 'headers.cookie', 'req.headers.cookie', 'set-cookie', '*["set-cookie"]',
  '*["x-api-key"]', '*["svc-signature"]',
  'password', '*.password', 'key', '*.key', 'token', '*.token', 'secret', '*.secret',
  'signature', '*.signature', 'totp', '*.totp', 'refresh_token', 'access_token', 'client_secret',
];

export function createLogger(level: string, destination: NodeJS.WritableStream = process.stderr): Logger {
  return pino({
    level,
    base: { svc: 'svc' },
    redact: { paths: redactPaths, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  }, pino.destination({ dest: destinationFd(destination), sync: false }));
}

function destinationFd(stream: NodeJS.WritableStream): number {
  return stream === process.stdout ? 1 : 2;
}
