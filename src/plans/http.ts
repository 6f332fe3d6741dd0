import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import { permittedMember, sessionStrategies } from '../http/auth/session.js';
import { wid } from '../http/params.js';
import type { PeopleService } from '../people/index.js';
import type { Plans } from './service.js';

/**
 * `GET /api/w/{wid}/plan` (owners and admins): the workspace's plan, whether it is paid, the
 * allowances it is held to (null: unlimited), and the subscription record billing events wrote.
 */
export const plansRoutes: Plugin<{ plans: Plans; people: PeopleService; production: boolean }> = {
  name: 'svc-plans',
  register(server, { plans, people, production }) {
    server.route({
      method: 'GET',
      path: '/api/w/{wid}/plan',
      options: { auth: { strategies: sessionStrategies(production) }, validate: { params: Joi.object({ wid }) } },
      async handler(request) {
        const { wid: w } = await permittedMember(people, request, 'plan.read');
        return plans.view(w);
      },
    });
  },
};
