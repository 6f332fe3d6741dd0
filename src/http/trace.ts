import { randomHex } from '../lib/random-pool.js';

/** W3C trace context: continue a valid incoming traceparent, else start a new trace. */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

export function nextTraceparent(incoming: string | undefined): string {
  const match = incoming ? TRACEPARENT.exec(incoming.trim()) : null;
  const span = randomHex(8);
  if (match && !/^0+$/.test(match[1]!) && !/^0+$/.test(match[2]!)) {
    return `00-${match[1]}-${span}-${match[3]}`;
  }
  return `00-${randomHex(16)}-${span}-01`;
}
