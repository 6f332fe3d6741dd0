import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import { machineCaller, SERVICE_TOKEN } from '../http/auth/callers.js';
import { member } from '../http/auth/permission.js';
import { sessionStrategies } from '../http/auth/session.js';
import type { Guards } from '../http/guards.js';
import type { Ledger } from './service.js';
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
 * `svc ledger verify --bundle` checks offline.
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
        return ledger.bundle(machineCaller(request).workspaceId, to ? { to: new Date(to).toISOString() } : {});
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
