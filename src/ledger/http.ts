import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import { caller, SERVICE_TOKEN } from '../http/auth/callers.js';
import { sessionStrategies } from '../http/auth/session.js';
import type { PeopleService } from '../people/index.js';
import type { Ledger } from './service.js';
import { wid } from '../http/params.js';

/**
 * GET /api/w/{wid}/ledger?after=INDEX (owner, admin, auditor): records in index order.
 * GET /v1/admin/evidence?to= (service token, evidence:read): the evidence bundle, which
 * `svc ledger verify --bundle` checks offline.
 */
export const ledgerRoutes: Plugin<{ ledger: Ledger; people: PeopleService; production: boolean }> = {
  name: 'svc-ledger',
  register(server, { ledger, people, production }) {
    server.route({
      method: 'GET',
      path: '/v1/admin/evidence',
      options: {
        auth: SERVICE_TOKEN,
        plugins: { svc: { tokenScope: 'evidence:read' } },
        validate: { query: Joi.object({ to: Joi.date().iso().raw() }) },
      },
      handler(request) {
        const { to } = request.query as { to?: string };
        return ledger.bundle(
          caller(request, 'service-token').workspaceId,
          to ? { to: new Date(to).toISOString() } : {},
        );
      },
    });
    server.route({
      method: 'GET',
      path: '/api/w/{wid}/ledger',
      options: {
        auth: { strategies: sessionStrategies(production) },
        validate: {
          params: Joi.object({ wid }),
          query: Joi.object({
            after: Joi.number().integer().min(-1),
            limit: Joi.number().integer().min(1).max(200).default(50),
          }),
        },
      },
      handler(request) {
        const { wid } = request.params as { wid: string };
        people.authorize(wid, caller(request, 'session').user, 'ledger.read');
        const { after, limit } = request.query as { after?: number; limit: number };
        return ledger.list(wid, { limit, ...(after !== undefined && after >= 0 ? { after } : {}) });
      },
    });
  },
};
