import type { IncomingMessage, Server as NodeServer, ServerResponse } from 'node:http';
import { randomIds } from '../lib/ids.js';
import { nextTraceparent } from './trace.js';

/**
 * What every request gets before hapi sees it, done once on the raw Node request and response
 * (cheaper than hapi extensions and per-header calls on the hot path):
 * - a request id and a trace (continued from a valid incoming traceparent);
 * - the headers every answer carries: x-request-id, svc-version, traceparent, nosniff (HSTS in
 *   production), and for everything but the machine routes under /v1/ frame denial and no referrer;
 * - bodies streamed over the limit are answered, not reset (see holdOversizedStreams).
 * Requests injected in tests (server.inject) bypass the listener; the pipeline stamps those.
 */
export const API_VERSION = '2026-10-01';

const REQUEST_ID = Symbol('svc.requestId');
const TRACE = Symbol('svc.traceparent');

type Stamped = IncomingMessage & { [REQUEST_ID]?: string; [TRACE]?: string };

export function stampRawRequests(listener: NodeServer, options: { production: boolean }): void {
  listener.prependListener('request', (req: Stamped, res: ServerResponse) => {
    const incoming = req.headers.traceparent;
    const id = randomIds.id('req');
    const trace = nextTraceparent(typeof incoming === 'string' ? incoming : undefined);
    req[REQUEST_ID] = id;
    req[TRACE] = trace;
    res.setHeader('x-request-id', id);
    res.setHeader('svc-version', API_VERSION);
    res.setHeader('traceparent', trace);
    res.setHeader('x-content-type-options', 'nosniff');
    // Frame and referrer policies protect documents; machine routes (/v1/) answer JSON only.
    if (!req.url?.startsWith('/v1/')) {
      res.setHeader('x-frame-options', 'DENY');
      res.setHeader('referrer-policy', 'no-referrer');
    }
    if (options.production) res.setHeader('strict-transport-security', 'max-age=31536000; includeSubDomains');
    holdOversizedStreams(req, res);
  });
}

/** The request id and trace given at the listener, or undefined for an injected request. */
export function stampOf(req: IncomingMessage): { requestId: string; traceparent: string } | undefined {
  const stamped = req as Stamped;
  return stamped[REQUEST_ID] && stamped[TRACE] ? { requestId: stamped[REQUEST_ID], traceparent: stamped[TRACE] } : undefined;
}

/**
 * hapi reads bodies with @hapi/wreck, which destroys the request the moment a body streamed
 * without content-length (chunked) passes maxBytes. That destroys the socket too, so the client
 * would see a reset instead of `413 body_too_large`. Here that destroy is held back until the
 * answer is written: the socket stops being read at once (nothing more is buffered), `end` tells
 * hapi the body is over so that it answers without draining the rest, and the 413 carries `connection: close`
 * (payloadFailAction), after which the socket is destroyed.
 */
function holdOversizedStreams(req: IncomingMessage, res: ServerResponse): void {
  if (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] === undefined) return;
  const destroy = req.destroy.bind(req);
  let held = false;
  req.destroy = ((error?: Error) => {
    if (held || res.writableFinished || req.socket?.destroyed) return destroy(error);
    held = true;
    req.unpipe();
    req.socket?.pause();
    // hapi takes `end` as "the payload is no longer pending" and answers without draining.
    req.emit('end');
    const finish = () => destroy(error);
    res.once('finish', finish);
    res.once('close', finish);
    return req;
  }) as typeof req.destroy;
}
