import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { HTTP_METHODS, Server } from '@hapi/hapi';
import { AppError } from '../errors/app-error.js';
import { renderError } from '../errors/render.js';
import type { Logger } from '../lib/log.js';

/**
 * Request bodies and their limits, at the listener, before hapi reads anything (front-door.ts
 * calls `admit` on every request). Each route keeps its own limit (`payload.maxBytes`: model
 * traffic and inbound hooks have theirs). Rules:
 * 1. A declared content-length over the limit of the route the request goes to is answered
 *    `413 body_too_large` at once, before a byte of the body is read (and without `100 Continue`).
 *    hapi never sees it: it would read the whole body before answering, or wait for a client that
 *    stalls until the request timeout.
 * 2. A body that overruns the limit as it streams (chunked) is answered 413 when the overrun is
 *    seen: @hapi/wreck destroys the request at that point, which would destroy the socket and the
 *    answer with it; the destroy is held back, the socket stops being read, and hapi is told that
 *    the body is over so that it answers without reading the rest (holdOverrun).
 * 3. When hapi fails a body for another reason (an unsupported content type, a compressed body
 *    that inflates past the limit, bad compression), it reads the whole rest of the body before it
 *    answers. The rest is not read: the answer goes out at once and closes the connection (cutDrain).
 * 4. An answer that closes the connection while the client may still be sending its body closes
 *    it lingering: FIN after the answer, then what still arrives is read and dropped for up to
 *    LINGER_MS or LINGER_BYTES, then the socket is destroyed. Destroying at once would make the
 *    kernel answer the unread upload with a reset, which discards the answer before the client has
 *    read it.
 * 5. A refusal is logged with the request id, the route and the limit (the pipeline logs those
 *    hapi answers); never the body.
 */

const LINGER_MS = 2_000;
const LINGER_BYTES = 16 * 1024 * 1024;

export interface BodyLimitsOptions {
  server: Server;
  baseUrl(): string;
  production: boolean;
  log: Logger;
}

export interface BodyLimits {
  /**
   * Answers a body declared over its route's limit (returns what the request log needs), or
   * guards the request's body (rules 2 to 4) and returns undefined for hapi to go on.
   */
  admit(req: IncomingMessage, res: ServerResponse, requestId: string): { route: string; status: number } | undefined;
}

export function createBodyLimits(options: BodyLimitsOptions): BodyLimits {
  const { server, log } = options;
  // Below the smallest limit of any route no lookup is needed (most bodies); known once routes are.
  let floor: number | undefined;
  const smallestLimit = () =>
    (floor ??= Math.min(...server.table().map((r) => r.settings.payload?.maxBytes ?? Infinity)));

  return {
    admit(req, res, requestId) {
      const declared = req.headers['content-length'];
      if (declared === undefined && req.headers['transfer-encoding'] === undefined) return undefined;
      guard(req, res);
      // Node has checked that a content-length is digits only.
      const length = declared === undefined ? 0 : Number(declared);
      if (length <= smallestLimit()) return undefined;
      const route = routeOf(server, req);
      if (!route || length <= route.maxBytes) return undefined;
      const error = new AppError('body_too_large', {
        message: `The request body (${length} bytes declared) is over this route's limit of ${route.maxBytes} bytes.`,
      });
      const text = JSON.stringify(
        renderError(error, { baseUrl: options.baseUrl(), requestId, production: options.production }),
      );
      res.writeHead(413, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(text),
        'cache-control': 'no-store',
        connection: 'close',
      });
      res.end(text);
      log.warn(
        { requestId, method: req.method, route: route.path, declared: length, limit: route.maxBytes },
        'request body over the limit refused',
      );
      return { route: route.path, status: 413 };
    },
  };
}

/** The route a request goes to, with its body limit; undefined when none matches. */
function routeOf(server: Server, req: IncomingMessage): { path: string; maxBytes: number } | undefined {
  try {
    const route = server.match(
      (req.method ?? 'GET') as HTTP_METHODS,
      new URL(req.url ?? '/', 'http://svc.invalid').pathname,
    );
    const maxBytes = route?.settings.payload?.maxBytes;
    return route && typeof maxBytes === 'number' ? { path: route.path, maxBytes } : undefined;
  } catch {
    return undefined;
  }
}

function guard(req: IncomingMessage, res: ServerResponse): void {
  const socket = req.socket as Socket | null;
  if (!socket) return;
  // Node closes a connection after an answer with `connection: close` by socket.destroySoon().
  socket.destroySoon = () => closeLingering(socket, req);
  holdOverrun(req, res);
  cutDrain(req, res);
}

/** Rule 2. */
function holdOverrun(req: IncomingMessage, res: ServerResponse): void {
  const destroy = req.destroy.bind(req);
  let held = false;
  req.destroy = ((error?: Error) => {
    // A body read whole is destroyed too (autoDestroy at its end): only an unfinished one is held.
    if (held || req.complete || res.writableFinished || req.socket?.destroyed) return destroy(error);
    held = true;
    req.unpipe();
    req.socket?.pause();
    // hapi takes `end` as "the payload is no longer pending" and answers without draining.
    req.emit('end');
    // The 413 carries connection: close (errors.ts payloadFailAction); whatever ends the answer,
    // the connection closes lingering.
    res.once('close', () => closeLingering(req.socket, req));
    return req;
  }) as typeof req.destroy;
}

/**
 * Rule 3. hapi reads bodies by piping them; the one reader that listens for `readable` on a
 * request is its drain after a failed payload (lib/route.js), which reads to the end.
 */
function cutDrain(req: IncomingMessage, res: ServerResponse): void {
  const watch = (event: string | symbol) => {
    if (event !== 'readable') return;
    req.off('newListener', watch);
    if (req.complete || req.readableEnded) return;
    if (!res.headersSent) res.setHeader('connection', 'close');
    req.unpipe();
    req.socket?.pause();
    // After the drain has attached its listeners (this runs before the listener is added).
    process.nextTick(() => req.emit('end'));
  };
  req.on('newListener', watch);
  res.once('close', () => req.off('newListener', watch));
}

const lingering = new WeakSet<Socket>();

/** Rule 4: FIN after the answer, read and drop what still comes (bounded), then destroy. */
function closeLingering(socket: Socket | null, req: IncomingMessage): void {
  if (!socket || socket.destroyed || lingering.has(socket)) return;
  lingering.add(socket);
  const start = socket.bytesRead;
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  // The client has closed its side: nothing more will come.
  socket.once('end', () => socket.destroy());
  socket.on('data', () => {
    if (socket.bytesRead - start > LINGER_BYTES) socket.destroy();
  });
  socket.end();
  req.resume();
  socket.resume();
}
