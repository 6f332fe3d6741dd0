import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import { caller, SERVICE_TOKEN } from '../http/auth/callers.js';
import type { AgentsService } from './service.js';

/** Machine administration's read of the fleet (SPEC.md 4.3). Standing arrives with the kill switch. */
export const agentsAdminRoutes: Plugin<{ agents: AgentsService }> = {
  name: 'svc-agents-admin',
  register(server, { agents }) {
    server.route({
      method: 'GET', path: '/v1/admin/agents',
      options: {
        auth: SERVICE_TOKEN,
        plugins: { svc: { tokenScope: 'agents:read' } },
        validate: { query: Joi.object({ tag: Joi.string().max(100), status: Joi.string().valid('running', 'stopped') }) },
      },
      handler(request) {
        const { tag, status } = request.query as { tag?: string; status?: string };
        const data = agents.list(caller(request, 'service-token').workspaceId)
          .filter((a) => !tag || a.tags.includes(tag))
          .map((a) => ({ id: a.id, name: a.name, actsFor: a.actsFor, tags: a.tags, status: 'running' as const, holds: [], createdAt: a.createdAt }))
          .filter((a) => !status || a.status === status);
        return { data, next: null };
      },
    });
  },
};
