import type { Plugin } from '@hapi/hapi';
import { AppError } from '../errors/app-error.js';
import { bearer } from '../http/auth/bearer.js';
import { svcOptions } from '../http/route-options.js';
import { API_PAGE_CSS, API_PAGE_POLICY, apiPage } from './api-page.js';
import { buildOpenApi, type RouteRow } from './openapi.js';
import { scrapeTokenMatches, type Metrics } from './metrics.js';

/**
 * GET /metrics on the main listener, only when a scrape token is configured (SVC_METRICS_TOKEN):
 * the token is a bearer, compared in constant time; without it, or with another, 401. With no
 * token configured the route does not exist (404), whatever else is set.
 */
export const metricsRoutes: Plugin<{ metrics: Metrics; token: string }> = {
  name: 'svc-metrics',
  register(server, { metrics, token }) {
    server.route({
      method: 'GET',
      path: '/metrics',
      options: {
        auth: false,
        description: 'Prometheus metrics (text format); bearer: the scrape token SVC_METRICS_TOKEN.',
        tags: ['observability'],
      },
      async handler(request, h) {
        if (!scrapeTokenMatches(token, bearer(request)))
          throw new AppError('unauthenticated', {
            message: 'GET /metrics takes the scrape token: send Authorization: Bearer <SVC_METRICS_TOKEN>.',
            headers: { 'www-authenticate': 'Bearer realm="metrics"' },
          });
        return h.response(await metrics.render()).type(metrics.contentType);
      },
    });
  },
};

/**
 * GET /openapi.json (OpenAPI 3.1, generated from the route table once every plugin is
 * registered: built at the first request) and GET /docs/api, its readable page (no script; the
 * stylesheet is /docs/api.css), all without a credential: they describe the API, not its data.
 */
export const apiDocsRoutes: Plugin<{ baseUrl: () => string; version: string }> = {
  name: 'svc-api-docs',
  register(server, { baseUrl, version }) {
    let doc: Record<string, unknown> | null = null;
    let page: string | null = null;
    const documentOf = () =>
      (doc ??= buildOpenApi(
        server.table().map((r) => {
          const auth = r.settings.auth as false | { strategies?: string[] } | undefined;
          return {
            method: r.method,
            path: r.path,
            auth: auth === false ? false : (auth?.strategies ?? []),
            validate: (r.settings.validate ?? {}) as RouteRow['validate'],
            ...(r.settings.description ? { description: r.settings.description } : {}),
            svc: svcOptions(r.settings),
          };
        }),
        { version, serverUrl: baseUrl() },
      ));
    server.route([
      {
        method: 'GET',
        path: '/openapi.json',
        options: { auth: false, description: 'This OpenAPI 3.1 document.' },
        handler: (_request, h) => h.response(documentOf()).type('application/json; charset=utf-8'),
      },
      {
        method: 'GET',
        path: '/docs/api',
        options: { auth: false, description: 'The API reference page (HTML).' },
        handler: (_request, h) =>
          h
            .response((page ??= apiPage(documentOf())))
            .type('text/html; charset=utf-8')
            .header('content-security-policy', API_PAGE_POLICY),
      },
      {
        method: 'GET',
        path: '/docs/api.css',
        options: { auth: false, description: "The API reference page's stylesheet." },
        handler: (_request, h) => h.response(API_PAGE_CSS).type('text/css; charset=utf-8'),
      },
    ]);
  },
};
