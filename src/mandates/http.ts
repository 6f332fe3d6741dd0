import Joi from 'joi';
import type { Plugin, Request } from '@hapi/hapi';
import type { AgentsService } from '../agents/index.js';
import type { Guards } from '../http/guards.js';
import { actorOf, caller } from '../http/auth/callers.js';
import { sessionStrategies } from '../http/auth/session.js';
import type { PeopleService } from '../people/index.js';
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
  people: PeopleService;
  production: boolean;
  guards: Guards;
}> = {
  name: 'svc-mandates',
  register(server, { mandates, agents, people, production, guards }) {
    const session = { strategies: sessionStrategies(production) };
    const write = { onPreAuth: guards.consoleWrite };
    const params = (request: Request) => request.params as { wid: string; aid: string };
    const who = async (request: Request, w: string, a: string) => {
      const c = caller(request, 'session');
      const role = await people.authorize(w, c.user, 'agents.manage');
      const actor = { actor: actorOf(c), userId: c.user.id, role };
      await agents.manageable(w, a, actor);
      return actor;
    };

    server.route([
      {
        method: 'GET',
        path: '/api/w/{wid}/agents/{aid}/mandate',
        options: { auth: session, validate: { params: Joi.object({ wid, aid }) } },
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
          auth: session,
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
        options: { auth: session, validate: { params: Joi.object({ wid }), query: page } },
        async handler(request) {
          const { wid: w } = params(request);
          await people.authorize(w, caller(request, 'session').user, 'workspace.read');
          return mandates.templates(w, pageOf(request.query));
        },
      },
      {
        method: 'POST',
        path: '/api/w/{wid}/templates',
        options: {
          auth: session,
          ext: write,
          plugins: { svc: { validationType: 'invalid_mandate', maxBodyMembers: 50_000 } },
          validate: { params: Joi.object({ wid }), payload: templateInputSchema },
        },
        async handler(request, h) {
          const { wid: w } = params(request);
          const c = caller(request, 'session');
          await people.authorize(w, c.user, 'templates.manage');
          return h
            .response(await mandates.createTemplate(w, request.payload as TemplateInput, { actor: actorOf(c) }))
            .code(201);
        },
      },
    ]);
  },
};
