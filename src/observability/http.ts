import type { Plugin } from '@hapi/hapi';
import { AppError } from '../errors/app-error.js';
import { bearer } from '../http/auth/bearer.js';
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
