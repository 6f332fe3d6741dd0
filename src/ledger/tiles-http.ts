import Joi from 'joi';
import type { Plugin, Request } from '@hapi/hapi';
import { AppError } from '../errors/app-error.js';
import { SERVICE_TOKEN, type Caller } from '../http/auth/callers.js';
import { sessionStrategies } from '../http/auth/session.js';
import type { Guards } from '../http/guards.js';
import { wid } from '../http/params.js';
import type { PeopleService } from '../people/index.js';
import { parseTilePath, type LedgerTiles } from './tiles.js';

/**
 * A workspace ledger for verifiers outside svc, in the C2SP tlog-tiles layout (tiles.ts):
 * GET /v1/ledger/{wid}/checkpoint            the newest signed checkpoint (text/plain)
 * GET /v1/ledger/{wid}/tile/<L>/<N>[.p/<W>]  hash tiles
 * GET /v1/ledger/{wid}/tile/entries/<N>[.p/<W>]  entry bundles
 * Read-only. Who may read: with `ledger.public` anyone; otherwise a service token of that
 * workspace with evidence:read (or a person's `svc login` token whose role grants it), or the
 * console session of a person who may read the workspace's ledger. Anything beyond the signed log
 * (or a path that is not a canonical tile path) is 404 not_found; tiles and bundles never change
 * once served, so they are cacheable for good.
 */
export interface LedgerTilesRouteOptions {
  tiles: LedgerTiles;
  people: PeopleService;
  production: boolean;
  guards: Guards;
  /** `ledger.public`: no credential needed. */
  public: boolean;
}

const IMMUTABLE = 'max-age=31536000, immutable';

/** The caller the route's credentials name, after one strategy has been tried directly. */
async function tryStrategy(request: Request, strategy: string): Promise<Caller | undefined> {
  const { credentials } = (await request.server.auth.test(strategy, request)) as { credentials: unknown };
  const found = credentials as { caller?: Caller; unresolved?: unknown };
  if (found && 'unresolved' in found) throw found.unresolved;
  return found.caller;
}

/** Throws unless the request may read workspace `w`'s ledger (see the plugin's rules). */
async function mayRead(request: Request, w: string, options: LedgerTilesRouteOptions): Promise<void> {
  if (options.public) return;
  if (request.headers.authorization !== undefined) {
    const c = await tryStrategy(request, SERVICE_TOKEN);
    if ((c?.kind === 'service-token' || c?.kind === 'person') && c.workspaceId === w) return;
    throw new AppError('forbidden', { message: "This credential may not read this workspace's ledger." });
  }
  for (const strategy of sessionStrategies(options.production)) {
    const c = await tryStrategy(request, strategy).catch(() => undefined);
    if (c?.kind !== 'session') continue;
    await options.people.authorize(w, c.user, 'ledger.read');
    return;
  }
  throw new AppError('unauthenticated', {
    message: 'This route takes a service token with evidence:read or a console session; none was sent.',
  });
}

const notFound = () => new AppError('not_found', { message: 'No such checkpoint or tile in this ledger.' });

export const ledgerTilesRoutes: Plugin<LedgerTilesRouteOptions> = {
  name: 'svc-ledger-tiles',
  register(server, options) {
    const { tiles, guards } = options;
    const common = {
      auth: false as const,
      ext: { onPreAuth: guards.publicRoute('public') },
      plugins: { svc: { tokenScope: 'evidence:read' } },
    };
    const cacheScope = options.public ? 'public' : 'private';
    server.route({
      method: 'GET',
      path: '/v1/ledger/{wid}/checkpoint',
      options: { ...common, validate: { params: Joi.object({ wid }) } },
      async handler(request, h) {
        const { wid: w } = request.params as { wid: string };
        await mayRead(request, w, options);
        const note = await tiles.checkpoint(w);
        if (note === null) throw notFound();
        return h.response(note).type('text/plain; charset=utf-8').header('cache-control', 'no-cache');
      },
    });
    server.route({
      method: 'GET',
      path: '/v1/ledger/{wid}/tile/{path*}',
      options: { ...common, validate: { params: Joi.object({ wid, path: Joi.string().max(200).required() }) } },
      async handler(request, h) {
        const { wid: w, path } = request.params as { wid: string; path: string };
        await mayRead(request, w, options);
        const ref = parseTilePath(path);
        const bytes = ref ? await tiles.tile(w, ref) : null;
        if (bytes === null) throw notFound();
        return h
          .response(bytes)
          .type('application/octet-stream')
          .header('cache-control', `${cacheScope}, ${IMMUTABLE}`);
      },
    });
  },
};
