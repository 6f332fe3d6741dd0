import type { ServerRoute } from '@hapi/hapi';
import Joi from 'joi';
import { member } from '../../http/auth/permission.js';
import type { Guards } from '../../http/guards.js';
import { wid } from '../../http/params.js';
import type { McpProxy } from '../proxy.js';
import { addServerSchema, approveToolSchema } from '../schemas.js';

/**
 * The console's routes of the workspace's upstream MCP servers behind /mcp, for owners and admins
 * (`mcp.manage`): list, add, remove, turn on and off, read an upstream's pinned tools and approve
 * a tool's pin. What changes the servers tells the connected clients (`changed`).
 */
export function serverRoutes(deps: {
  proxy: McpProxy;
  guards: Guards;
  session: { strategies: string[] };
  changed: (wid: string) => Promise<void>;
}): ServerRoute[] {
  const { proxy, guards, session, changed } = deps;
  const name = Joi.string().max(64).required();
  const read = { auth: session, app: { permission: 'mcp.manage' } } as const;
  const write = { ...read, ext: { onPreAuth: guards.consoleWrite } };
  return [
    {
      method: 'GET',
      path: '/api/w/{wid}/mcp-servers',
      options: { ...read, validate: { params: Joi.object({ wid }) } },
      async handler(request) {
        return { data: (await proxy.listAll(member(request).wid)).map((x) => proxy.view(x)), next: null };
      },
    },
    {
      method: 'POST',
      path: '/api/w/{wid}/mcp-servers',
      options: { ...write, validate: { params: Joi.object({ wid }), payload: addServerSchema } },
      async handler(request, h) {
        const { wid: w, actor } = member(request);
        const added = await proxy.add(w, request.payload as never, actor);
        await changed(w);
        return h.response(added).code(201);
      },
    },
    {
      method: 'DELETE',
      path: '/api/w/{wid}/mcp-servers/{name}',
      options: { ...write, validate: { params: Joi.object({ wid, name }) } },
      async handler(request) {
        const { wid: w, actor } = member(request);
        await proxy.remove(w, (request.params as { name: string }).name, actor);
        await changed(w);
        return {};
      },
    },
    {
      method: 'PATCH',
      path: '/api/w/{wid}/mcp-servers/{name}',
      options: {
        ...write,
        plugins: { svc: { errors: ['not_found'] } },
        validate: {
          params: Joi.object({ wid, name }),
          payload: Joi.object({ enabled: Joi.boolean().required() }),
        },
      },
      async handler(request) {
        const { wid: w, actor } = member(request);
        const { enabled } = request.payload as { enabled: boolean };
        const done = await proxy.setEnabled(w, (request.params as { name: string }).name, enabled, actor);
        await changed(w);
        return done;
      },
    },
    {
      method: 'GET',
      path: '/api/w/{wid}/mcp-servers/{name}/tools',
      options: {
        ...read,
        plugins: { svc: { errors: ['not_found'] } },
        validate: { params: Joi.object({ wid, name }) },
      },
      async handler(request) {
        const { wid: w } = member(request);
        const { reachable, problem, tools } = await proxy.pinnedTools(w, (request.params as { name: string }).name);
        return { data: tools, next: null, reachable, problem };
      },
    },
    {
      method: 'POST',
      path: '/api/w/{wid}/mcp-servers/{name}/tools/{tool}/approve',
      options: {
        ...write,
        plugins: { svc: { errors: ['not_found'] } },
        validate: {
          params: Joi.object({ wid, name, tool: Joi.string().max(128).required() }),
          payload: approveToolSchema,
        },
      },
      async handler(request) {
        const { wid: w, actor } = member(request);
        const { name: n, tool } = request.params as { name: string; tool: string };
        const { hash, callsPerMinute } = request.payload as { hash: string; callsPerMinute?: number | null };
        return proxy.approveTool(w, n, tool, hash, actor, callsPerMinute);
      },
    },
  ];
}
