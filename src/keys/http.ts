import Joi from 'joi';
import type { Plugin, Request } from '@hapi/hapi';
import type { AgentActor, AgentsService } from '../agents/index.js';
import type { Guards } from '../http/guards.js';
import { actorOf, caller, WORKSPACE_KEY } from '../http/auth/callers.js';
import { member } from '../http/auth/permission.js';
import { sessionStrategies } from '../http/auth/session.js';
import { expiresInDaysSchema, mintKeySchema, type MintKeyInput } from './schemas.js';
import { toKeyView, type KeysService } from './service.js';
import { page, pageOf, wid } from '../http/params.js';

const aid = Joi.string().max(64).required();

/**
 * Workspace keys: minted by an admin key (machines) or in the console (owners, admins); and an
 * agent's keys, for whoever may manage that agent (owners, admins, the member it acts for).
 */
export const keysRoutes: Plugin<{
  keys: KeysService;
  agents: AgentsService;
  production: boolean;
  guards: Guards;
}> = {
  name: 'svc-keys',
  register(server, { keys, agents, production, guards }) {
    const session = { strategies: sessionStrategies(production) };
    const write = { onPreAuth: guards.consoleWrite };
    const params = (request: Request) => request.params as { wid: string; aid: string; keyId: string };
    /** The workspace's keys: owners and admins. */
    const keysManage = { auth: session, app: { permission: 'keys.manage' } } as const;
    /** An agent's keys: whoever may manage agents; the agents service decides which agents they may. */
    const agentsManage = { auth: session, app: { permission: 'agents.manage' } } as const;
    const who = (request: Request): AgentActor => {
      const { actor, user, role } = member(request);
      return { actor, userId: user.id, role };
    };
    server.route([
      {
        method: 'POST',
        path: '/v1/admin/keys',
        options: { auth: WORKSPACE_KEY, plugins: { svc: { keyScope: 'admin' } }, validate: { payload: mintKeySchema } },
        async handler(request, h) {
          const c = caller(request, 'workspace-key');
          return h.response(await keys.mint(c.workspaceId, request.payload as MintKeyInput, actorOf(c))).code(201);
        },
      },
      {
        // `svc keys list|revoke` through the server: an admin key may already mint keys of any
        // scope, so reading and revoking them widens nothing.
        method: 'GET',
        path: '/v1/admin/keys',
        options: { auth: WORKSPACE_KEY, plugins: { svc: { keyScope: 'admin' } }, validate: { query: page } },
        handler(request) {
          return keys.list(caller(request, 'workspace-key').workspaceId, pageOf(request.query));
        },
      },
      {
        method: 'DELETE',
        path: '/v1/admin/keys/{id}',
        options: {
          auth: WORKSPACE_KEY,
          plugins: { svc: { keyScope: 'admin' } },
          validate: { params: Joi.object({ id: Joi.string().max(64).required() }) },
        },
        async handler(request) {
          const c = caller(request, 'workspace-key');
          await keys.revoke(c.workspaceId, (request.params as { id: string }).id, actorOf(c));
          return {};
        },
      },
      {
        method: 'GET',
        path: '/v1/whoami',
        options: { auth: WORKSPACE_KEY, plugins: { svc: { keyScope: 'any' } } },
        handler: (request) => toKeyView(caller(request, 'workspace-key').key),
      },
      {
        method: 'GET',
        path: '/api/w/{wid}/keys',
        options: { ...keysManage, validate: { params: Joi.object({ wid }), query: page } },
        handler: (request) => keys.list(member(request).wid, pageOf(request.query)),
      },
      {
        method: 'POST',
        path: '/api/w/{wid}/keys',
        options: { ...keysManage, ext: write, validate: { params: Joi.object({ wid }), payload: mintKeySchema } },
        async handler(request, h) {
          const { wid: w, actor } = member(request);
          return h.response(await keys.mint(w, request.payload as MintKeyInput, actor)).code(201);
        },
      },
      {
        method: 'DELETE',
        path: '/api/w/{wid}/keys/{id}',
        options: {
          ...keysManage,
          ext: write,
          validate: { params: Joi.object({ wid, id: Joi.string().max(64).required() }) },
        },
        async handler(request) {
          const { wid: w, actor } = member(request);
          await keys.revoke(w, (request.params as { id: string }).id, actor);
          return {};
        },
      },
      {
        // The agent's keys, for whoever may mint and revoke them (owners, admins, the member it
        // acts for); never their values, which are shown once, when minted.
        method: 'GET',
        path: '/api/w/{wid}/agents/{aid}/keys',
        options: { ...agentsManage, validate: { params: Joi.object({ wid, aid }) } },
        async handler(request) {
          const { wid: w, aid: a } = params(request);
          await agents.manageable(w, a, who(request));
          return { data: await keys.forAgent(w, a), next: null };
        },
      },
      {
        method: 'POST',
        path: '/api/w/{wid}/agents/{aid}/keys',
        options: {
          ...agentsManage,
          ext: write,
          validate: {
            params: Joi.object({ wid, aid }),
            payload: Joi.object({
              name: Joi.string().trim().min(1).max(200),
              expiresInDays: expiresInDaysSchema.allow(null),
            }).allow(null),
          },
        },
        async handler(request, h) {
          const { wid: w, aid: a } = params(request);
          const actor = who(request);
          await agents.manageable(w, a, actor);
          const { name, expiresInDays } =
            (request.payload as { name?: string; expiresInDays?: number | null } | null) ?? {};
          const minted = await keys.mint(
            w,
            { scope: 'agent', agentId: a, ...(name ? { name } : {}), expiresInDays: expiresInDays ?? null },
            actor.actor,
          );
          const { id, key, name: named, createdAt, expiresAt } = minted;
          return h.response({ id, key, agentId: a, name: named, createdAt, expiresAt }).code(201);
        },
      },
      {
        method: 'DELETE',
        path: '/api/w/{wid}/agents/{aid}/keys/{keyId}',
        options: {
          ...agentsManage,
          ext: write,
          validate: { params: Joi.object({ wid, aid, keyId: Joi.string().max(64).required() }) },
        },
        async handler(request) {
          const { wid: w, aid: a, keyId } = params(request);
          const actor = who(request);
          await agents.manageable(w, a, actor);
          await keys.revoke(w, keyId, actor.actor, { agentId: a });
          return {};
        },
      },
    ]);
  },
};
