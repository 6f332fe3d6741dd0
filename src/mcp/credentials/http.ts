import type { ServerRoute } from '@hapi/hapi';
import Joi from 'joi';
import { caller } from '../../http/auth/callers.js';
import { member } from '../../http/auth/permission.js';
import type { Guards } from '../../http/guards.js';
import { wid } from '../../http/params.js';
import type { McpProxy } from '../proxy.js';
import type { Holder } from '../upstream-auth.js';

/** Where the upstream's authorization server sends the person back (a session route of this deployment). */
export const CALLBACK_PATH = '/api/mcp-oauth/callback';

/**
 * The routes of each agent's own upstream credentials (../upstream-auth.ts), for owners and admins
 * (`mcp.manage`): the credentials of an upstream (never their secrets), an agent's static secret
 * set and removed, an OAuth connection started for an agent or the workspace, its callback (the
 * same person's session), and a connection removed.
 */
export function credentialRoutes(deps: {
  proxy: McpProxy;
  guards: Guards;
  baseUrl: () => string;
  session: { strategies: string[] };
}): ServerRoute[] {
  const { proxy, guards, session } = deps;
  const name = Joi.string().max(64).required();
  const agentId = Joi.string().max(64).required();
  const holder = Joi.alternatives()
    .try(Joi.object({ agentId }), Joi.object({ workspace: Joi.boolean().valid(true).required() }))
    .required();
  /** The upstream named, for a person who manages the workspace's MCP servers. */
  const manager = async (request: Parameters<typeof caller>[0]) => {
    const m = member(request);
    return { server: await proxy.server(m.wid, (request.params as { name: string }).name), m };
  };
  const read = { auth: session, app: { permission: 'mcp.manage' } } as const;
  const write = { ...read, ext: { onPreAuth: guards.consoleWrite } };
  return [
    {
      method: 'GET',
      path: '/api/w/{wid}/mcp-servers/{name}/credentials',
      options: { ...read, validate: { params: Joi.object({ wid, name }) } },
      async handler(request) {
        const { server } = await manager(request);
        return { data: await proxy.credentials.list(server), next: null, hasSecret: server.secretSealed !== null };
      },
    },
    {
      method: 'PUT',
      path: '/api/w/{wid}/mcp-servers/{name}/credentials/agents/{agentId}',
      options: {
        ...write,
        validate: {
          params: Joi.object({ wid, name, agentId }),
          payload: Joi.object({ secret: Joi.string().min(1).max(4096).required() }),
        },
      },
      async handler(request) {
        const { server, m } = await manager(request);
        const { agentId: aid } = request.params as { agentId: string };
        return proxy.credentials.setSecret(server, aid, (request.payload as { secret: string }).secret, m.actor);
      },
    },
    {
      method: 'DELETE',
      path: '/api/w/{wid}/mcp-servers/{name}/credentials/agents/{agentId}',
      options: { ...write, validate: { params: Joi.object({ wid, name, agentId }) } },
      async handler(request) {
        const { server, m } = await manager(request);
        const { agentId: aid } = request.params as { agentId: string };
        await proxy.credentials.remove(server, { agentId: aid }, 'secret', m.actor);
        return {};
      },
    },
    {
      method: 'POST',
      path: '/api/w/{wid}/mcp-servers/{name}/connect',
      options: {
        ...write,
        plugins: { svc: { errors: ['not_found', 'upstream_failure'] } },
        validate: { params: Joi.object({ wid, name }), payload: Joi.object({ for: holder }) },
      },
      async handler(request) {
        const { server, m } = await manager(request);
        const { for: h } = request.payload as { for: Holder };
        return proxy.credentials.connect(
          server,
          h,
          { userId: m.user.id, actor: m.actor },
          `${deps.baseUrl()}${CALLBACK_PATH}`,
        );
      },
    },
    {
      method: 'POST',
      path: '/api/w/{wid}/mcp-servers/{name}/disconnect',
      options: { ...write, validate: { params: Joi.object({ wid, name }), payload: Joi.object({ for: holder }) } },
      async handler(request) {
        const { server, m } = await manager(request);
        const { for: h } = request.payload as { for: Holder };
        await proxy.credentials.remove(server, h, 'oauth', m.actor);
        return {};
      },
    },
    {
      // The authorization server's redirect, followed by the person's browser: no CSRF header
      // (a top-level GET), but the session must be the one that started the connection.
      method: 'GET',
      path: CALLBACK_PATH,
      options: {
        auth: session,
        validate: {
          query: Joi.object({
            code: Joi.string().max(4096),
            state: Joi.string().max(512).required(),
            iss: Joi.string().max(2048),
            error: Joi.string().max(256),
            error_description: Joi.string().max(2048),
          }),
        },
      },
      async handler(request, h) {
        const c = caller(request, 'session');
        const q = request.query as { code?: string; state: string; iss?: string; error?: string };
        const done = await proxy.credentials.finish(q, c.user.id);
        const who = 'agentId' in done.holder ? `agent:${done.holder.agentId}` : 'workspace';
        return h.redirect(
          `/console/mcp?w=${encodeURIComponent(done.workspaceId)}#connected=${encodeURIComponent(`${done.server}/${who}`)}`,
        );
      },
    },
  ];
}
