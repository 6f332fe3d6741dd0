import Joi from 'joi';
import type { Plugin, Request } from '@hapi/hapi';
import type { Guards } from '../http/guards.js';
import { machineCaller, SERVICE_TOKEN } from '../http/auth/callers.js';
import { member } from '../http/auth/permission.js';
import { sessionStrategies } from '../http/auth/session.js';
import type { AgentActor, AgentsService, AgentViewer } from './service.js';
import type { AgentRegistration } from './registration.js';
import { page, pageOf, tagList as tags, userId, wid } from '../http/params.js';

const aid = Joi.string().max(64).required();

// With `blueprint` (docs/gate.md#machine-administration) the agent starts with the blueprint's
// tags and a mandate from its templates, in the same write.
const createSchema = Joi.object({
  name: Joi.string().trim().min(1).max(200).required(),
  actsFor: userId.allow(null),
  tags,
  blueprint: Joi.string().trim().min(1).max(64),
});
const patchSchema = Joi.object({
  name: Joi.string().trim().min(1).max(200),
  actsFor: userId.allow(null),
  tags,
}).min(1);

/**
 * Agents in the console (by role: owners and admins manage every agent, members the
 * agents that act for them; owners, admins and auditors read every agent, members and analysts
 * only those that act for them, any other being 404) and the machine read of the fleet
 * (a service token with `agents:read`).
 */
export const agentsRoutes: Plugin<{
  agents: AgentsService;
  blueprints: AgentRegistration;
  production: boolean;
  guards: Guards;
}> = {
  name: 'svc-agents',
  register(server, { agents, blueprints, production, guards }) {
    const session = { strategies: sessionStrategies(production) };
    /** Writes: a person who may manage agents; the service decides which (`agents.manage`). */
    const manage = {
      auth: session,
      app: { permission: 'agents.manage' },
      ext: { onPreAuth: guards.consoleWrite },
    } as const;
    /** Reads: any role, narrowed per person by the service (`sees`). */
    const read = { auth: session, app: { permission: 'workspace.read' } } as const;
    const who = (request: Request): AgentActor => {
      const { actor, user, role } = member(request);
      return { actor, userId: user.id, role };
    };
    const viewer = (request: Request): AgentViewer => {
      const { user, role } = member(request);
      return { userId: user.id, role };
    };
    const params = (request: Request) => request.params as { wid: string; aid: string; keyId: string };

    server.route([
      {
        method: 'GET',
        path: '/v1/admin/agents',
        options: {
          auth: SERVICE_TOKEN,
          plugins: { svc: { tokenScope: 'agents:read' } },
          validate: {
            query: Joi.object({ tag: Joi.string().max(100), status: Joi.string().valid('running', 'stopped') }),
          },
        },
        async handler(request) {
          const { tag, status } = request.query as { tag?: string; status?: string };
          const data = (await agents.views(machineCaller(request).workspaceId)).filter(
            (a) => (!tag || a.tags.includes(tag)) && (!status || a.status === status),
          );
          return { data, next: null };
        },
      },
      {
        method: 'GET',
        path: '/api/w/{wid}/agents',
        options: { ...read, validate: { params: Joi.object({ wid }), query: page } },
        handler: (request) => agents.page(params(request).wid, pageOf(request.query), viewer(request)),
      },
      {
        method: 'POST',
        path: '/api/w/{wid}/agents',
        options: { ...manage, validate: { params: Joi.object({ wid }), payload: createSchema } },
        async handler(request, h) {
          const { wid: w } = params(request);
          const body = request.payload as {
            name: string;
            actsFor?: string | null;
            tags?: string[];
            blueprint?: string;
          };
          const agent = await blueprints.register({ workspaceId: w, ...body }, who(request));
          return h.response(await agents.view(agent)).code(201);
        },
      },
      {
        method: 'GET',
        path: '/api/w/{wid}/agents/{aid}',
        options: { ...read, validate: { params: Joi.object({ wid, aid }) } },
        async handler(request) {
          const { wid: w, aid: a } = params(request);
          return agents.view(await agents.readable(w, a, viewer(request)));
        },
      },
      {
        method: 'PATCH',
        path: '/api/w/{wid}/agents/{aid}',
        options: { ...manage, validate: { params: Joi.object({ wid, aid }), payload: patchSchema } },
        async handler(request) {
          const { wid: w, aid: a } = params(request);
          return agents.view(await agents.update(w, a, request.payload as { name?: string }, who(request)));
        },
      },
      {
        method: 'DELETE',
        path: '/api/w/{wid}/agents/{aid}',
        options: { ...manage, validate: { params: Joi.object({ wid, aid }) } },
        async handler(request) {
          const { wid: w, aid: a } = params(request);
          await agents.remove(w, a, who(request));
          return {};
        },
      },
    ]);
  },
};
