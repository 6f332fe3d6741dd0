import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import type { AgentsService } from '../agents/index.js';
import type { Guards } from '../http/guards.js';
import { machineCaller, SERVICE_TOKEN } from '../http/auth/callers.js';
import { member } from '../http/auth/permission.js';
import { sessionStrategies } from '../http/auth/session.js';
import { page, pageOf, wid } from '../http/params.js';
import { blueprintInputSchema, tokenRegistrationSchema, type BlueprintInput } from './schemas.js';
import type { BlueprintsService } from './service.js';

/**
 * Blueprints in the console (owners and admins create them; every member may read
 * them, as they may read templates) and a service token registering an agent from one
 * (`POST /v1/admin/agents`, `agents:write`): `201` agent; `400 template_only` for any `mandate` or `rules`;
 * `400 unknown_template` for a blueprint or template the workspace lacks.
 */
export const blueprintsRoutes: Plugin<{
  blueprints: BlueprintsService;
  agents: AgentsService;
  production: boolean;
  guards: Guards;
}> = {
  name: 'svc-blueprints',
  register(server, { blueprints, agents, production, guards }) {
    const session = { strategies: sessionStrategies(production) };
    const write = { onPreAuth: guards.consoleWrite };

    server.route([
      {
        method: 'GET',
        path: '/api/w/{wid}/blueprints',
        options: {
          auth: session,
          app: { permission: 'workspace.read' },
          validate: { params: Joi.object({ wid }), query: page },
        },
        handler: (request) => blueprints.page(member(request).wid, pageOf(request.query)),
      },
      {
        method: 'POST',
        path: '/api/w/{wid}/blueprints',
        options: {
          auth: session,
          app: { permission: 'templates.manage' },
          ext: write,
          validate: { params: Joi.object({ wid }), payload: blueprintInputSchema },
        },
        async handler(request, h) {
          const { wid: w, actor } = member(request);
          return h.response(await blueprints.create(w, request.payload as BlueprintInput, { actor })).code(201);
        },
      },
      {
        method: 'POST',
        path: '/v1/admin/agents',
        options: {
          auth: SERVICE_TOKEN,
          plugins: {
            svc: {
              tokenScope: 'agents:write',
              validationTypeByField: { mandate: 'template_only', rules: 'template_only' },
            },
          },
          validate: { payload: tokenRegistrationSchema },
        },
        async handler(request, h) {
          const c = machineCaller(request);
          const body = request.payload as {
            blueprint: string;
            name: string;
            actsFor?: string | null;
            tags?: string[];
            templates?: string[];
          };
          const agent = await blueprints.register(
            { workspaceId: c.workspaceId, ...body },
            // A person signed in with svc login registers as in the console; a token by its id.
            c.person ? { actor: c.actor, ...c.person } : { actor: c.actor, tokenId: c.tokenId },
          );
          return h.response({ ...(await agents.view(agent)), mandateRules: agent.mandateRules }).code(201);
        },
      },
    ]);
  },
};
