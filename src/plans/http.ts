import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import { member } from '../http/auth/permission.js';
import { sessionStrategies } from '../http/auth/session.js';
import { wid } from '../http/params.js';
import type { Plans } from './service.js';

/**
 * `GET /api/w/{wid}/plan` (owners and admins): the workspace's plan, whether it is paid, the
 * allowances it is held to (null: unlimited), and the subscription record billing events wrote.
 */
export const plansRoutes: Plugin<{ plans: Plans; production: boolean }> = {
  name: 'svc-plans',
  register(server, { plans, production }) {
    server.route({
      method: 'GET',
      path: '/api/w/{wid}/plan',
      options: {
        auth: { strategies: sessionStrategies(production) },
        app: { permission: 'plan.read' },
        validate: { params: Joi.object({ wid }) },
      },
      handler: (request) => plans.view(member(request).wid),
    });
  },
};
