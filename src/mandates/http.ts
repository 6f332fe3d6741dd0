import Joi from 'joi';
import type { Plugin, Request } from '@hapi/hapi';
import type { AgentsService } from '../agents/index.js';
import type { Guards } from '../http/guards.js';
import { member } from '../http/auth/permission.js';
import { sessionStrategies } from '../http/auth/session.js';
import { mandateInputSchema, templateInputSchema, type MandateInput, type TemplateInput } from './schemas.js';
import type { Mandates } from './service.js';
import { page, pageOf, wid } from '../http/params.js';

const aid = Joi.string().max(64).required();

/**
 * An agent's mandate (owner, admin, or the member the agent acts for) and the workspace's
 * templates (owner, admin). Malformed rules: 400 invalid_mandate listing every field.
 */
export const mandatesRoutes: Plugin<{
  mandates: Mandates;
  agents: AgentsService;
  production: boolean;
  guards: Guards;
}> = {
  name: 'svc-mandates',
  register(server, { mandates, agents, production, guards }) {
    const session = { strategies: sessionStrategies(production) };
    const write = { onPreAuth: guards.consoleWrite };
    const params = (request: Request) => request.params as { wid: string; aid: string };
    /** A person who may manage agents, and this agent (the agents service decides). */
    const who = async (request: Request, w: string, a: string) => {
      const { actor: name, user, role } = member(request);
      const actor = { actor: name, userId: user.id, role };
      await agents.manageable(w, a, actor);
      return actor;
    };
    const agentsManage = { auth: session, app: { permission: 'agents.manage' } } as const;
    const templatesManage = { auth: session, app: { permission: 'templates.manage' } } as const;

    server.route([
      {
        method: 'GET',
        path: '/api/w/{wid}/agents/{aid}/mandate',
        options: { ...agentsManage, validate: { params: Joi.object({ wid, aid }) } },
        async handler(request) {
          const { wid: w, aid: a } = params(request);
          await who(request, w, a);
          return mandates.get(w, a);
        },
      },
      {
        method: 'PUT',
        path: '/api/w/{wid}/agents/{aid}/mandate',
        options: {
          ...agentsManage,
          ext: write,
          plugins: { svc: { validationType: 'invalid_mandate', maxBodyMembers: 50_000 } },
          validate: { params: Joi.object({ wid, aid }), payload: mandateInputSchema },
        },
        async handler(request) {
          const { wid: w, aid: a } = params(request);
          return mandates.put(w, a, request.payload as MandateInput, await who(request, w, a));
        },
      },
      {
        method: 'GET',
        path: '/api/w/{wid}/templates',
        options: {
          auth: session,
          app: { permission: 'workspace.read' },
          validate: { params: Joi.object({ wid }), query: page },
        },
        handler: (request) => mandates.templates(member(request).wid, pageOf(request.query)),
      },
      {
        method: 'POST',
        path: '/api/w/{wid}/templates',
        options: {
          ...templatesManage,
          ext: write,
          plugins: { svc: { validationType: 'invalid_mandate', maxBodyMembers: 50_000 } },
          validate: { params: Joi.object({ wid }), payload: templateInputSchema },
        },
        async handler(request, h) {
          const { wid: w, actor } = member(request);
          return h.response(await mandates.createTemplate(w, request.payload as TemplateInput, { actor })).code(201);
        },
      },
    ]);
  },
};
