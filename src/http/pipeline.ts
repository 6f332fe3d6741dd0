import type { Plugin, Request, ResponseToolkit, Server } from '@hapi/hapi';
import type { Logger } from '../lib/log.js';
import { randomIds } from '../lib/ids.js';
import { renderError } from '../errors/render.js';
import { setUnmatched, toAppError } from './errors.js';
import { unmatched } from './not-found.js';
import { nextTraceparent } from './trace.js';

/**
 * The request pipeline every response goes through (SPEC.md 7.1, 7.6, 9):
 * - every response, error or not, carries x-request-id, svc-version and traceparent;
 * - every error is rendered from the catalogue, with requestId equal to x-request-id;
 * - a 5xx logs its cause and shows none of it;
 * - one log line per request: request id, method, route, status, ms (never headers or bodies).
 */
export const API_VERSION = '2026-10-01';

declare module '@hapi/hapi' {
  interface RequestApplicationState {
    requestId: string;
    traceparent: string;
  }
}

export interface PipelineOptions {
  /** The public base address (known only once the server is bound, when not configured). */
  baseUrl: () => string;
  production: boolean;
  log: Logger;
}

export const pipeline: Plugin<PipelineOptions> = {
  name: 'svc-pipeline',
  register(server: Server, options: PipelineOptions) {
    setUnmatched(unmatched);

    server.ext('onRequest', (request, h) => {
      request.app.requestId = randomIds.id('req');
      const incoming = request.headers.traceparent;
      request.app.traceparent = nextTraceparent(typeof incoming === 'string' ? incoming : undefined);
      return h.continue;
    });

    server.ext('onPreResponse', (request: Request, h: ResponseToolkit) => {
      const { response } = request;
      const stamp = (res: { header(name: string, value: string): unknown }) => {
        res.header('x-request-id', request.app.requestId);
        res.header('svc-version', API_VERSION);
        res.header('traceparent', request.app.traceparent);
      };
      if (response && 'isBoom' in response && response.isBoom) {
        const err = toAppError(server, request, response);
        if (err.status >= 500) {
          options.log.error({ requestId: request.app.requestId, route: request.route.path, err: response }, 'request failed');
        }
        const body = renderError(err, { baseUrl: options.baseUrl(), requestId: request.app.requestId, production: options.production });
        const res = h.response(body).code(err.status).type('application/json; charset=utf-8');
        for (const [name, value] of Object.entries(err.headers)) res.header(name, value);
        stamp(res);
        return res;
      }
      if (response && 'header' in response) stamp(response);
      return h.continue;
    });

    server.events.on('response', (request) => {
      const status = request.response && 'statusCode' in request.response ? request.response.statusCode : 0;
      options.log.info({
        requestId: request.app.requestId,
        method: request.method.toUpperCase(),
        route: request.route.path,
        status,
        ms: Date.now() - request.info.received,
      }, 'request');
    });
  },
};
