import type { Plugin } from '@hapi/hapi';
import { WORKSPACE_KEY } from '../http/auth/callers.js';
import type { GatewayModel } from '../settings/schema.js';

/** GET /v1/models: the configured catalogue in the OpenAI list shape (API.md section 6). */
export const modelsRoutes: Plugin<{ models: readonly GatewayModel[] }> = {
  name: 'svc-models',
  register(server, { models }) {
    const created = Math.floor(Date.now() / 1000);
    const data = models.map((m) => ({
      id: m.id, object: 'model', created, owned_by: m.provider, provider: m.provider,
      jurisdiction: m.jurisdiction, priceMicrosPerMTokIn: m.priceMicrosPerMTokIn,
      priceMicrosPerMTokOut: m.priceMicrosPerMTokOut, taskClasses: m.taskClasses,
    }));
    server.route({
      method: 'GET', path: '/v1/models',
      options: { auth: WORKSPACE_KEY, plugins: { svc: { keyScope: 'any' } } },
      handler: () => ({ object: 'list', data }),
    });
  },
};
