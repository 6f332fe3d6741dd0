import type { Plugin } from '@hapi/hapi';
import { machineCaller, SERVICE_TOKEN } from '../http/auth/callers.js';
import type { Scorecard } from './service.js';

/** GET /v1/admin/scorecard (service token, evidence:read): `{ scorecard: "<JWS>" }`. */
export const scorecardRoutes: Plugin<{ scorecard: Scorecard }> = {
  name: 'svc-scorecard',
  register(server, { scorecard }) {
    server.route({
      method: 'GET',
      path: '/v1/admin/scorecard',
      options: { auth: SERVICE_TOKEN, plugins: { svc: { tokenScope: 'evidence:read' } } },
      async handler(request) {
        return { scorecard: (await scorecard.signed(machineCaller(request).workspaceId)).scorecard };
      },
    });
  },
};
