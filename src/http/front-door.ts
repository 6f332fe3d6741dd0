import type { IncomingMessage, Server as NodeServer, ServerResponse } from 'node:http';
import { randomIds } from '../lib/ids.js';
import { nextTraceparent } from './trace.js';

/**
 * The front door: the Node server's one request handler, in front of hapi's. What every request
 * gets before hapi sees it, done once on the raw Node request and response (cheaper than hapi
 * extensions and per-header calls on the hot path):
 * - a request id and a trace (continued from a valid incoming traceparent);
 * - the headers every answer carries: x-request-id, svc-version, traceparent, nosniff (HSTS in
 *   production), and for everything but the machine routes under /v1/ frame denial and no referrer;
 * - bodies streamed over the limit are answered, not reset (see holdOversizedStreams);
 * - GET and HEAD of /healthz and /readyz are answered here, so that hapi's load shedding (checked
 *   at its dispatch) never refuses them: an orchestrator must see an overloaded process as alive.
 *   Other methods on them go on to hapi (405, as for any route).
 * Requests injected in tests (server.inject) bypass the listener; the pipeline stamps those.
 */
export const API_VERSION = '2026-10-01';

const REQUEST_ID = Symbol('svc.requestId');
const TRACE = Symbol('svc.traceparent');
const ARRIVED = Symbol('svc.arrived');

type Stamped = IncomingMessage & { [REQUEST_ID]?: string; [TRACE]?: string; [ARRIVED]?: number };

/** When the request reached the listener, on the high-resolution clock (performance.now()); undefined for an injected one. */
export function arrivedAt(req: IncomingMessage): number | undefined {
  return (req as Stamped)[ARRIVED];
}

export interface FrontDoorOptions {
  production: boolean;
  health(path: '/healthz' | '/readyz'): { status: number; body: unknown };
  /** Called once per request answered here, for the request log. */
  answered(entry: { requestId: string; method: string; route: string; status: number; ms: number }): void;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export function installFrontDoor(listener: NodeServer, options: FrontDoorOptions): void {
  // hapi attached its dispatcher when the server was created; it now runs behind this one.
  const hapi = listener.listeners('request') as Handler[];
  listener.removeAllListeners('request');
  listener.on('request', (req: Stamped, res: ServerResponse) => {
    req[ARRIVED] = performance.now();
    const received = Date.now();
    const incoming = req.headers.traceparent;
    const id = randomIds.id('req');
    const trace = nextTraceparent(typeof incoming === 'string' ? incoming : undefined);
    req[REQUEST_ID] = id;
    req[TRACE] = trace;
    res.setHeader('x-request-id', id);
    res.setHeader('svc-version', API_VERSION);
    res.setHeader('traceparent', trace);
    for (const [name, value] of securityHeaders(req.url ?? '/', options.production)) res.setHeader(name, value);
    holdOversizedStreams(req, res);
    const path = req.url === '/healthz' || req.url === '/readyz' ? req.url : undefined;
    if (path && (req.method === 'GET' || req.method === 'HEAD')) {
      const { status, body } = options.health(path);
      const text = JSON.stringify(body);
      res.writeHead(status, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(text),
        'cache-control': 'no-store',
      });
      res.end(req.method === 'HEAD' ? undefined : text);
      options.answered({ requestId: id, method: req.method, route: path, status, ms: Date.now() - received });
      return;
    }
    for (const handler of hapi) handler(req, res);
  });
}

/**
 * The security headers of an answer: nosniff everywhere; frame and referrer policies outside the
 * machine routes (/v1/ answers JSON only; the policies protect documents); HSTS in production.
 */
export function securityHeaders(path: string, production: boolean): Array<[string, string]> {
  const headers: Array<[string, string]> = [['x-content-type-options', 'nosniff']];
  if (!path.startsWith('/v1/')) headers.push(['x-frame-options', 'DENY'], ['referrer-policy', 'no-referrer']);
  if (production) headers.push(['strict-transport-security', 'max-age=31536000; includeSubDomains']);
  return headers;
}

/** The request id and trace given at the listener, or undefined for an injected request. */
export function stampOf(req: IncomingMessage): { requestId: string; traceparent: string } | undefined {
  const stamped = req as Stamped;
  return stamped[REQUEST_ID] && stamped[TRACE]
    ? { requestId: stamped[REQUEST_ID], traceparent: stamped[TRACE] }
    : undefined;
}

/**
 * hapi reads bodies with @hapi/wreck, which destroys the request the moment a body streamed
 * without content-length (chunked) passes maxBytes. That destroys the socket too, so the client
 * would see a reset instead of `413 body_too_large`. Here that destroy is held back until the
 * answer is written: the socket stops being read at once (nothing more is buffered), `end` tells
 * hapi the body is over so that it answers without draining the rest, and the 413 carries `connection: close`
 * (payloadFailAction). Once it is written the connection closes lingering, as web servers do: the
 * write side is shut (FIN after the answer) and what the client still sends is read and dropped
 * for up to LINGER_MS or LINGER_BYTES. Destroying at once would make the kernel answer the unread
 * upload with a reset, which can discard the 413 before the client has read it.
 */
const LINGER_MS = 2_000;
const LINGER_BYTES = 16 * 1024 * 1024;

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
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      const socket = req.socket;
      if (!socket || socket.destroyed) return destroy(error);
      const timer = setTimeout(() => destroy(error), LINGER_MS);
      timer.unref();
      let dropped = 0;
      socket.on('data', (chunk: Buffer) => {
        dropped += chunk.length;
        if (dropped > LINGER_BYTES) destroy(error);
      });
      socket.once('close', () => clearTimeout(timer));
      socket.end();
      req.resume();
      socket.resume();
    };
    res.once('finish', finish);
    res.once('close', finish);
    return req;
  }) as typeof req.destroy;
}
