import type { Plugin, ResponseToolkit } from '@hapi/hapi';
import { errorsDocsPage } from '../errors/docs-page.js';
import type { Store } from '../store/index.js';

export interface HealthSource {
  store: Store;
  isDraining(): boolean;
}

/** The answers of /healthz (the process is up) and /readyz (it can serve: store open, not draining). */
export function healthAnswer(source: HealthSource, path: '/healthz' | '/readyz'): { status: number; body: unknown } {
  if (path === '/healthz') return { status: 200, body: { status: 'ok' } };
  if (source.isDraining()) return { status: 503, body: { status: 'draining' } };
  return { status: 200, body: { status: 'ready', schemaVersion: source.store.schemaVersion() } };
}

/**
 * Health, readiness and the errors documentation page: no credential. Real GET requests for the
 * health routes are answered by the front door (front-door.ts) before hapi's load shedding; the
 * routes here serve injected requests and give the route table its complete shape.
 */
export const systemRoutes: Plugin<HealthSource> = {
  name: 'svc-system',
  register(server, options) {
    const page = errorsDocsPage();
    const answer = (path: '/healthz' | '/readyz') => (_request: unknown, h: ResponseToolkit) => {
      const { status, body } = healthAnswer(options, path);
      return h.response(body as object).code(status);
    };
    server.route([
      { method: 'GET', path: '/healthz', options: { auth: false }, handler: answer('/healthz') },
      { method: 'GET', path: '/readyz', options: { auth: false }, handler: answer('/readyz') },
      {
        method: 'GET',
        path: '/docs/errors',
        options: { auth: false },
        handler: (_request, h) => h.response(page).type('text/html; charset=utf-8'),
      },
    ]);
  },
};
