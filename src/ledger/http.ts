import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import { caller } from '../http/auth/callers.js';
import { sessionStrategies } from '../http/auth/session.js';
import type { PeopleService } from '../people/index.js';
import type { Ledger } from './service.js';

/** GET /api/w/{wid}/ledger?after=INDEX (owner, admin, auditor): records in index order. */
export const ledgerRoutes: Plugin<{ ledger: Ledger; people: PeopleService; production: boolean }> = {
  name: 'svc-ledger',
  register(server, { ledger, people, production }) {
    server.route({
      method: 'GET', path: '/api/w/{wid}/ledger',
      options: {
        auth: { strategies: sessionStrategies(production) },
        validate: {
          params: Joi.object({ wid: Joi.string().pattern(/^ws_[0-9A-Za-z]{22}$/).required() }),
          query: Joi.object({ after: Joi.number().integer().min(-1), limit: Joi.number().integer().min(1).max(200).default(50) }),
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
