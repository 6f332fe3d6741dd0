import type { IncomingMessage, Server as NodeServer, ServerResponse } from 'node:http';
import { randomIds } from '../lib/ids.js';
import type { BodyLimits } from './body-limits.js';
import { SpanStatusCode, startServerSpan, traceparentOf, withSpan, type Span } from '../lib/tracing.js';
import { nextTraceparent } from './trace.js';

/**
 * The front door: the Node server's one request handler, in front of hapi's. What every request
 * gets before hapi sees it, done once on the raw Node request and response (cheaper than hapi
 * extensions and per-header calls on the hot path):
 * - a request id and a trace (continued from a valid incoming traceparent);
 * - the headers every answer carries: x-request-id, svc-version, traceparent, nosniff (HSTS in
 *   production), and for everything but the machine routes under /v1/ frame denial and no referrer;
 * - a body declared over its route's limit is answered 413 here, before hapi reads a byte of it,
 *   and bodies that overrun as they stream are answered, not reset (body-limits.ts);
 * - GET and HEAD of /healthz and /readyz are answered here, so that hapi's load shedding (checked
 *   at its dispatch) never refuses them: an orchestrator must see an overloaded process as alive.
 *   Other methods on them go on to hapi (405, as for any route).
 * Requests with `expect: 100-continue` (Node's checkContinue) get the same, so that a body over
 * the limit is refused before the client is told to send it.
 * Requests injected in tests (server.inject) bypass the listener; the pipeline stamps those.
 */
export const API_VERSION = '2026-10-01';

const REQUEST_ID = Symbol('svc.requestId');
const TRACE = Symbol('svc.traceparent');
const ARRIVED = Symbol('svc.arrived');
const SPAN = Symbol('svc.span');

type Stamped = IncomingMessage & { [REQUEST_ID]?: string; [TRACE]?: string; [ARRIVED]?: number; [SPAN]?: Span };

/** The request's server span, when tracing records it: the pipeline names it after its route. */
export function requestSpanOf(req: IncomingMessage): Span | undefined {
  return (req as Stamped)[SPAN];
}

/** When the request reached the listener, on the high-resolution clock (performance.now()); undefined for an injected one. */
export function arrivedAt(req: IncomingMessage): number | undefined {
  return (req as Stamped)[ARRIVED];
}

export interface FrontDoorOptions {
  production: boolean;
  health(path: '/healthz' | '/readyz'): Promise<{ status: number; body: unknown }>;
  /** Called once per request answered here, for the request log. */
  answered(
    entry: { requestId: string; method: string; route: string; status: number; ms: number },
    req: IncomingMessage,
  ): void;
  /** Body limits enforced before hapi reads a body. */
  bodies?: BodyLimits;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export function installFrontDoor(listener: NodeServer, options: FrontDoorOptions): void {
  // hapi attached its dispatchers when the server was created; they now run behind these.
  for (const event of ['request', 'checkContinue'] as const) {
    const hapi = listener.listeners(event) as Handler[];
    listener.removeAllListeners(event);
    listener.on(event, (req: Stamped, res: ServerResponse) => {
      if (!admit(req, res, options)) return;
      const span = req[SPAN];
      // The request's span is active for all of hapi's work on it (the store writes, the signing,
      // the upstream calls become its children), and ends when the answer is written or dropped.
      if (span) withSpan(span, () => dispatch(hapi, req, res));
      else dispatch(hapi, req, res);
    });
  }
}

function dispatch(hapi: Handler[], req: IncomingMessage, res: ServerResponse): void {
  for (const handler of hapi) handler(req, res);
}

/** Stamps the request and answers it here when it is health or a refused body; true: hapi goes on. */
function admit(req: Stamped, res: ServerResponse, options: FrontDoorOptions): boolean {
  req[ARRIVED] = performance.now();
  const received = Date.now();
  const incoming = req.headers.traceparent;
  const id = randomIds.id('req');
  // Health probes are not traced: an orchestrator's probes would drown the traces that matter.
  const probe = req.url === '/healthz' || req.url === '/readyz';
  const span = probe ? null : startServerSpan(req.headers, req.method ?? 'GET');
  const trace = (span && traceparentOf(span)) ?? nextTraceparent(typeof incoming === 'string' ? incoming : undefined);
  if (span) {
    req[SPAN] = span;
    res.once('close', () => {
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
  }
  req[REQUEST_ID] = id;
  req[TRACE] = trace;
  res.setHeader('x-request-id', id);
  res.setHeader('svc-version', API_VERSION);
  res.setHeader('traceparent', trace);
  for (const [name, value] of securityHeaders(req.url ?? '/', options.production)) res.setHeader(name, value);
  const method = req.method ?? 'GET';
  const refused = options.bodies?.admit(req, res, id);
  if (refused) {
    options.answered({ requestId: id, method, ...refused, ms: Date.now() - received }, req);
    return false;
  }
  const path = req.url === '/healthz' || req.url === '/readyz' ? req.url : undefined;
  if (path && (method === 'GET' || method === 'HEAD')) {
    void answerHealth(req, res, options, { id, method, path, received });
    return false;
  }
  return true;
}

/** Answers a health probe here (readiness reads the store); a failure to judge is 503, never a hang. */
async function answerHealth(
  req: IncomingMessage,
  res: ServerResponse,
  options: FrontDoorOptions,
  probe: { id: string; method: string; path: '/healthz' | '/readyz'; received: number },
): Promise<void> {
  const { status, body } = await options
    .health(probe.path)
    .catch(() => ({ status: 503, body: { status: 'degraded', reason: 'store_unavailable' } as unknown }));
  if (res.destroyed || res.headersSent) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  res.end(probe.method === 'HEAD' ? undefined : text);
  options.answered(
    { requestId: probe.id, method: probe.method, route: probe.path, status, ms: Date.now() - probe.received },
    req,
  );
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
