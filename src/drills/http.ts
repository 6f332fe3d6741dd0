import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import { machineCaller, SERVICE_TOKEN } from '../http/auth/callers.js';
import type { Drills } from './service.js';

/** POST /v1/admin/drills (service token, agents:freeze): a kill-switch drill; 201 with its report. */
export const drillsRoutes: Plugin<{ drills: Drills }> = {
  name: 'svc-drills',
  register(server, { drills }) {
    server.route({
      method: 'POST',
      path: '/v1/admin/drills',
      options: {
        auth: SERVICE_TOKEN,
        plugins: { svc: { tokenScope: 'agents:freeze' } },
        // A selector is accepted, as on a freeze's body; a drill only ever touches its own agent.
        validate: { payload: Joi.object({ selector: Joi.object().unknown(true) }).allow(null) },
      },
      async handler(request, h) {
        const c = machineCaller(request);
        return h.response(await drills.run(c.workspaceId, { actor: c.actor, tokenId: c.tokenId })).code(201);
      },
    });
  },
};
