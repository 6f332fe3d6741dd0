import Joi from 'joi';
import type { Plugin, Request } from '@hapi/hapi';
import { AppError } from '../errors/app-error.js';
import { machineCaller, SERVICE_TOKEN, type Caller } from '../http/auth/callers.js';
import { member } from '../http/auth/permission.js';
import { sessionStrategies } from '../http/auth/session.js';
import type { Guards } from '../http/guards.js';
import type { Ledger } from './service.js';
import type { PeopleService } from '../people/index.js';
import { parseTilePath, type LedgerTiles } from './tiles.js';
import { withInclusionProofs } from './proofs.js';
import { hasFilter, type LedgerFilter } from './search.js';
import { wid } from '../http/params.js';

/**
 * GET /api/w/{wid}/ledger?after=INDEX (owner, admin, auditor): records in index order. The
 * console adds filters (`kind`, `actor`, `subject`, `from`, `to`; search.ts) and newest first
 * (`order=desc`, resumed with `before=INDEX`); `next` resumes the same read.
 * GET /api/w/{wid}/ledger/checkpoint: the newest signed checkpoint and the ledger's size.
 * POST /api/w/{wid}/ledger/verify: "verify now", the same check `svc ledger verify` makes over
 * the store (Ledger.verify), answered as its report with the time it ran. It only reads.
 * GET /v1/admin/evidence?to= (service token, evidence:read): the evidence bundle, which
 * `svc ledger verify --bundle` checks offline; each record its newest checkpoint covers carries
 * its inclusion proof (proofs.ts).
 */
const text = Joi.string().trim().max(200).allow('');

export const ledgerRoutes: Plugin<{ ledger: Ledger; production: boolean; guards: Guards }> = {
  name: 'svc-ledger',
  register(server, { ledger, production, guards }) {
    // Owners, admins and auditors.
    const reader = { auth: { strategies: sessionStrategies(production) }, app: { permission: 'ledger.read' } } as const;
    server.route({
      method: 'GET',
      path: '/v1/admin/evidence',
      options: {
        auth: SERVICE_TOKEN,
        plugins: { svc: { tokenScope: 'evidence:read' } },
        validate: { query: Joi.object({ to: Joi.date().iso().raw() }) },
      },
      async handler(request) {
        const { to } = request.query as { to?: string };
        return withInclusionProofs(
          await ledger.bundle(machineCaller(request).workspaceId, to ? { to: new Date(to).toISOString() } : {}),
        );
      },
    });
    server.route({
      method: 'GET',
      path: '/api/w/{wid}/ledger',
      options: {
        ...reader,
        validate: {
          params: Joi.object({ wid }),
          query: Joi.object({
            // `after` resumes an oldest-first read, `before` a newest-first one.
            after: Joi.number().integer().min(-1).when('order', { is: 'desc', then: Joi.forbidden() }),
            before: Joi.number().integer().min(0).when('order', { is: 'desc', otherwise: Joi.forbidden() }),
            limit: Joi.number().integer().min(1).max(200).default(50),
            order: Joi.string().valid('asc', 'desc').default('asc'),
            kind: text,
            actor: text,
            subject: text,
            from: Joi.date().iso(),
            to: Joi.date().iso(),
          }),
        },
      },
      async handler(request) {
        const { wid: w } = member(request);
        const q = request.query as {
          after?: number;
          before?: number;
          limit: number;
          order: 'asc' | 'desc';
          kind?: string;
          actor?: string;
          subject?: string;
          from?: Date;
          to?: Date;
        };
        const filter: LedgerFilter = {
          ...(q.kind ? { kind: q.kind } : {}),
          ...(q.actor ? { actor: q.actor } : {}),
          ...(q.subject ? { subject: q.subject } : {}),
          ...(q.from ? { from: q.from.toISOString() } : {}),
          ...(q.to ? { to: q.to.toISOString() } : {}),
        };
        const after = q.after !== undefined && q.after >= 0 ? q.after : undefined;
        if (q.order === 'asc' && !hasFilter(filter))
          return ledger.list(w, { limit: q.limit, ...(after !== undefined ? { after } : {}) });
        const cursor = q.order === 'asc' ? after : q.before;
        return ledger.search(w, {
          filter,
          order: q.order,
          limit: q.limit,
          ...(cursor !== undefined ? { cursor } : {}),
        });
      },
    });
    server.route({
      method: 'GET',
      path: '/api/w/{wid}/ledger/checkpoint',
      options: { ...reader, validate: { params: Joi.object({ wid }) } },
      handler: (request) => ledger.latestCheckpoint(member(request).wid),
    });
    server.route({
      method: 'POST',
      path: '/api/w/{wid}/ledger/verify',
      options: {
        ...reader,
        ext: { onPreAuth: guards.consoleWrite },
        validate: { params: Joi.object({ wid }), payload: Joi.object({}).allow(null) },
      },
      handler: (request) => ledger.verifyNow(member(request).wid),
    });
  },
};

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
