import type { Plugin } from '@hapi/hapi';
import { errorsDocsPage } from '../errors/docs-page.js';
import type { Store } from '../store/index.js';

/** Health, readiness and the errors documentation page: no credential. */
export const systemRoutes: Plugin<{ store: Store; isDraining(): boolean }> = {
  name: 'svc-system',
  register(server, options) {
    const page = errorsDocsPage();
    server.route([
      { method: 'GET', path: '/healthz', options: { auth: false }, handler: () => ({ status: 'ok' }) },
      {
        method: 'GET', path: '/readyz', options: { auth: false },
        handler: (_request, h) => {
          if (options.isDraining()) return h.response({ status: 'draining' }).code(503);
          return { status: 'ready', schemaVersion: options.store.schemaVersion() };
        },
      },
      {
        method: 'GET', path: '/docs/errors', options: { auth: false },
        handler: (_request, h) => h.response(page).type('text/html; charset=utf-8'),
      },
    ]);
  },
};
