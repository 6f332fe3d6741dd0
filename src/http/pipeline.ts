import type { Plugin, Request, ResponseToolkit, Server } from '@hapi/hapi';
import type { Logger } from '../lib/log.js';
import { randomIds } from '../lib/ids.js';
import { metrics } from '../lib/metrics.js';
import { AppError, invalidField } from '../errors/app-error.js';
import { anthropicEnvelope, oauthEnvelope, renderError } from '../errors/render.js';
import { jsonFault, sizeFault, stripPrototypeKeys } from '../lib/well-formed.js';
import { svcOptions } from './route-options.js';

/** Members (keys and items) a body may have, unless its route says otherwise. */
export const MAX_BODY_MEMBERS = 2_000;
import { clientAddress } from './client-address.js';
import { toAppError } from './errors.js';
import { API_VERSION, arrivedAt, requestSpanOf, securityHeaders, stampOf } from './front-door.js';
import { observeRequest } from './request-metrics.js';
import { nextTraceparent } from './trace.js';

/**
 * The request pipeline every response goes through (docs/api.md#errors):
 * - every response, error or not, carries x-request-id, svc-version and traceparent;
 * - every error is rendered from the catalogue, with requestId equal to x-request-id;
 * - a 5xx logs its cause and shows none of it;
 * - one log line per request: request id, method, route, status, ms to the answer (never headers
 *   or bodies).
 */
export { API_VERSION } from './front-door.js';

declare module '@hapi/hapi' {
  interface RequestApplicationState {
    requestId: string;
    traceparent: string;
    /** server.inject: no listener stamped the raw response. */
    injected?: boolean;
    /** Headers a route wants on its answer whatever it is, error or not (the gate's ratelimit-*). */
    responseHeaders?: Record<string, string>;
  }
}

export interface PipelineOptions {
  /** The public base address (known only once the server is bound, when not configured). */
  baseUrl: () => string;
  production: boolean;
  log: Logger;
  /** retry-after sent with 503 overloaded. */
  retryAfterSeconds: number;
  /** Proxies whose x-forwarded-for names the client in the request log. */
  trustedProxies?: readonly string[];
}

/**
 * One log line per request, from a fixed list of fields: never headers, query or body. `client` is
 * the client's address: the socket's, or through a trusted proxy (SVC_TRUSTED_PROXIES) the one
 * its x-forwarded-for names.
 */
export function logRequest(
  log: Logger,
  entry: { requestId: string; method: string; route: string; status: number; ms: number; client: string },
): void {
  log.info(entry, 'request');
}

/**
 * The request's id and trace: stamped by the listener for real requests (front-door.ts), made
 * here, once, for injected ones (server.inject bypasses the listener).
 */
export function requestStamp(request: Request): { requestId: string; traceparent: string } {
  if (!request.app.requestId) {
    const stamp = stampOf(request.raw.req);
    if (stamp) {
      request.app.requestId = stamp.requestId;
      request.app.traceparent = stamp.traceparent;
    } else {
      const incoming = request.headers.traceparent;
      request.app.requestId = randomIds.id('req');
      request.app.traceparent = nextTraceparent(typeof incoming === 'string' ? incoming : undefined);
      request.app.injected = true;
    }
  }
  return { requestId: request.app.requestId, traceparent: request.app.traceparent };
}

/** The headers the listener sets on real requests, set through hapi for injected ones. */
function stampInjected(
  request: Request,
  res: { header(name: string, value: string): unknown },
  production: boolean,
): void {
  res.header('x-request-id', request.app.requestId);
  res.header('svc-version', API_VERSION);
  res.header('traceparent', request.app.traceparent);
  for (const [name, value] of securityHeaders(request.path, production)) res.header(name, value);
}

/** The request's span (when traced) is named after its route template, once routed. */
function nameRequestSpan(request: Request): void {
  const span = requestSpanOf(request.raw.req);
  if (!span) return;
  const route = request.route.path;
  span.updateName(`${request.method.toUpperCase()} ${route}`);
  span.setAttribute('http.route', route);
}

export const pipeline: Plugin<PipelineOptions> = {
  name: 'svc-pipeline',
  register(server: Server, options: PipelineOptions) {
    // The request's log line is written here, from the answer about to go out: a separate
    // 'response' event subscription costs every request another dispatch.
    const logLine = (request: Request, requestId: string, status: number) => {
      const method = request.method.toUpperCase();
      const route = request.route.path;
      const client = clientAddress(request, options.trustedProxies ?? []);
      const ms = Date.now() - request.info.received;
      logRequest(options.log, { requestId, method, route, status, ms, client });
      // The answer is about to be written: time to it, from the listener's arrival mark when there is one.
      const arrived = arrivedAt(request.raw.req);
      const seconds =
        arrived === undefined ? (Date.now() - request.info.received) / 1000 : (performance.now() - arrived) / 1000;
      observeRequest({ route, method, status, seconds });
      nameRequestSpan(request);
    };

    // Every parsed body, before validation (one lifecycle step, not two):
    // - a body with tens of thousands of members costs the validator (which lists every field at
    //   fault) as much as a second of work, so bodies are bounded first;
    // - every string must be well-formed Unicode (the ledger hashes what routes record, and
    //   RFC 8785 has no form for a lone surrogate), nothing may nest past 64 levels, and no number
    //   may be one JSON cannot carry (1e400 parses to Infinity, which no record can hold). Each is
    //   refused by field (lib/well-formed.ts `jsonFault`, shared with the signed inbound routes).
    server.ext('onPostAuth', (request: Request, h: ResponseToolkit) => {
      // Named here too: a route that hands the raw request to a foreign handler (/mcp) never
      // reaches onPreResponse.
      nameRequestSpan(request);
      const { payload } = request;
      if (
        typeof payload === 'string' ||
        (payload !== null && typeof payload === 'object' && !Buffer.isBuffer(payload))
      ) {
        const route = svcOptions(request.route.settings);
        const tooBig = sizeFault(payload, {
          members: route.maxBodyMembers ?? MAX_BODY_MEMBERS,
          arrayItems: route.maxArrayItems,
        });
        if (tooBig) throw invalidField(null, tooBig);
        // hapi refuses a JSON `__proto__` key before this; `constructor` and `prototype` (and a
        // form's `__proto__`) are removed, for every route but those that forward the body as it
        // came, before any schema or lookup meets them.
        const stripped = route.forwarded ? 0 : stripPrototypeKeys(payload);
        if (stripped > 0) {
          const { requestId } = requestStamp(request);
          options.log.info(
            { requestId, route: request.route.path, keys: stripped },
            'prototype keys removed from a body',
          );
        }
        const fault = jsonFault(payload);
        if (fault) throw invalidField(fault.field, fault.message);
      }
      return h.continue;
    });

    server.ext('onPreResponse', (request: Request, h: ResponseToolkit) => {
      const { response } = request;
      const { requestId } = requestStamp(request);
      if (response && 'isBoom' in response && response.isBoom) {
        let err: AppError;
        try {
          err = toAppError(server, request, response, { retryAfterSeconds: options.retryAfterSeconds });
        } catch (failed) {
          // Never hapi's own 500 page: a failure to map the error is itself rendered and logged.
          err = new AppError('internal', { cause: failed });
        }
        if (err.type === 'overloaded') {
          // Load shedding is the server working as configured, not a fault: one short line each
          // (a stall sheds hundreds), and the count in svc_http_requests_shed_total.
          metrics.requestsShed.inc();
          options.log.warn({ requestId, route: request.route.path }, 'request shed: the server is overloaded');
        } else if (err.status >= 500) {
          const cause = err.type === 'internal' && err.cause !== undefined ? { mapping: err.cause } : {};
          options.log.error({ requestId, route: request.route.path, err: response, ...cause }, 'request failed');
        } else if (err.type === 'body_too_large') {
          // As body-limits.ts logs the bodies it refuses before hapi: the id, the route, the limit.
          const limit = request.route.settings.payload?.maxBytes;
          options.log.warn({ requestId, route: request.route.path, limit }, 'request body over the limit refused');
        }
        const rendered = renderError(err, { baseUrl: options.baseUrl(), requestId, production: options.production });
        const envelope = svcOptions(request.route.settings).errorEnvelope;
        const body =
          envelope === 'anthropic'
            ? anthropicEnvelope(rendered)
            : envelope === 'oauth'
              ? oauthEnvelope(rendered, err.status)
              : rendered;
        const res = h.response(body).code(err.status).type('application/json; charset=utf-8');
        for (const [name, value] of Object.entries(request.app.responseHeaders ?? {})) res.header(name, value);
        for (const [name, value] of Object.entries(err.headers)) res.header(name, value);
        if (envelope === 'oauth') res.header('cache-control', 'no-store');
        if (request.app.injected) stampInjected(request, res, options.production);
        logLine(request, requestId, err.status);
        return res;
      }
      if (request.app.responseHeaders && response && 'header' in response) {
        for (const [name, value] of Object.entries(request.app.responseHeaders)) response.header(name, value);
      }
      if (request.app.injected && response && 'header' in response)
        stampInjected(request, response, options.production);
      logLine(request, requestId, response && 'statusCode' in response ? response.statusCode : 0);
      return h.continue;
    });
  },
};
