import type { Plugin, Request, ResponseToolkit } from '@hapi/hapi';
import { errorsDocsPage } from '../errors/docs-page.js';
import { metaRepo } from '../store/meta-repo.js';
import type { Store } from '../store/index.js';

export interface HealthSource {
  store: Store;
  isDraining(): boolean;
}

/**
 * The answers of /healthz (the process is up) and /readyz (it can serve: not draining, and the
 * store takes writes). A store out of space is `503 degraded` (reads still answer; every write
 * fails closed with `503 store_unavailable`); each such readiness check tries one small write, so
 * readiness comes back on its own once space returns, even with no other traffic. A store that
 * cannot even be read (a database that does not answer) is `503 degraded` too, without a version,
 * and one whose file a read found damaged is `503 degraded` with the reason `store_damaged`.
 */
export async function healthAnswer(
  source: HealthSource,
  path: '/healthz' | '/readyz',
): Promise<{ status: number; body: unknown }> {
  if (path === '/healthz') return { status: 200, body: { status: 'ok' } };
  if (source.isDraining()) return { status: 503, body: { status: 'draining' } };
  // Damage met inside the store file stays until it is restored: no write probe, no retry.
  if (source.store.damaged?.()) return { status: 503, body: { status: 'degraded', reason: 'store_damaged' } };
  let schemaVersion: number;
  try {
    schemaVersion = await source.store.schemaVersion();
  } catch {
    return { status: 503, body: { status: 'degraded', reason: 'store_unavailable' } };
  }
  if (!source.store.writable()) {
    recheckWrites(source.store);
    return { status: 503, body: { status: 'degraded', reason: 'store_unavailable', schemaVersion } };
  }
  return { status: 200, body: { status: 'ready', schemaVersion } };
}

const rechecking = new WeakSet<Store>();

/** One small write at a time; its outcome sets store.writable(). */
function recheckWrites(store: Store): void {
  if (rechecking.has(store)) return;
  rechecking.add(store);
  const meta = metaRepo(store);
  store
    .write(() => meta.bumpWriteCheck())
    .catch(() => undefined)
    .finally(() => rechecking.delete(store));
}

/** Where a person or a client starts: the console, the docs and the API of this server. */
export function rootIndex(baseUrl: string): Record<string, unknown> {
  const at = (path: string) => `${baseUrl.replace(/\/+$/, '')}${path}`;
  return {
    name: 'svc',
    console: at('/console'),
    docs: { api: at('/docs/api'), errors: at('/docs/errors') },
    api: {
      openapi: at('/openapi.json'),
      gate: at('/v1/actions/authorize'),
      gateway: at('/v1/chat/completions'),
      mcp: at('/mcp'),
      health: at('/healthz'),
    },
  };
}

/**
 * Whether an Accept header asks for a page rather than data: text/html is listed (a browser's
 * navigation sends `text/html,…,*\/*;q=0.8`) with a weight above zero and at least that of
 * application/json. Wildcards count for neither, so `*\/*` (curl, fetch) gets JSON.
 */
export function prefersHtml(accept: string | undefined): boolean {
  if (!accept) return false;
  const weights = new Map<string, number>();
  for (const range of accept.split(',')) {
    const [type = '', ...params] = range.split(';').map((p) => p.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    if (!Number.isFinite(weight)) continue;
    weights.set(type, Math.max(weights.get(type) ?? 0, Math.min(Math.max(weight, 0), 1)));
  }
  const html = weights.get('text/html') ?? 0;
  return html > 0 && html >= (weights.get('application/json') ?? 0);
}

/**
 * Health, readiness, the errors documentation page and `GET /`: no credential. Real GET requests for the
 * health routes are answered by the front door (front-door.ts) before hapi's load shedding; the
 * routes here serve injected requests and give the route table its complete shape.
 */
export const systemRoutes: Plugin<HealthSource & { baseUrl: () => string }> = {
  name: 'svc-system',
  register(server, options) {
    const page = errorsDocsPage();
    const answer = (path: '/healthz' | '/readyz') => async (_request: unknown, h: ResponseToolkit) => {
      const { status, body } = await healthAnswer(options, path);
      return h.response(body as object).code(status);
    };
    server.route([
      { method: 'GET', path: '/healthz', options: { auth: false }, handler: answer('/healthz') },
      { method: 'GET', path: '/readyz', options: { auth: false }, handler: answer('/readyz') },
      {
        // A browser goes to the console (which sends a person who is not signed in to /login); any
        // other client is told where the console, the docs and the API are.
        method: 'GET',
        path: '/',
        options: {
          auth: false,
          description: 'Where to start: the console (a browser is redirected), the docs, the API',
        },
        handler: (request: Request, h: ResponseToolkit) =>
          prefersHtml(typeof request.headers.accept === 'string' ? request.headers.accept : undefined)
            ? h.redirect('/console').code(303).header('vary', 'accept')
            : h.response(rootIndex(options.baseUrl())).header('vary', 'accept'),
      },
      {
        method: 'GET',
        path: '/docs/errors',
        options: { auth: false },
        handler: (_request, h) => h.response(page).type('text/html; charset=utf-8'),
      },
    ]);
  },
};
