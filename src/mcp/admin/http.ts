import type { Request, ServerRoute } from '@hapi/hapi';
import Joi from 'joi';
import { machineCaller, SERVICE_TOKEN } from '../../http/auth/callers.js';
import type { McpProxy } from '../proxy.js';
import { addServerSchema, approveToolSchema, serverName, toolName } from '../schemas.js';

/**
 * The machine routes of the upstream MCP servers (issue 34, part 8), for `svc mcp` and
 * automation: a service token with scope `mcp:read` lists servers and tools and tests a
 * connection; `mcp:write` adds and removes servers and approves a tool's pin. They call the
 * proxy as the console's routes do, so the ledger records are the same (`mcp.server_added`,
 * `mcp.server_removed`, `mcp.tool_approved`), under `token:<name>`.
 * - `GET /v1/admin/mcp-servers/{name}` is the connection test: the server, and whether its
 *   upstream answers a listing now (`reachable`), and why not (`problem`: its cause, as adding
 *   one names it).
 */
export function mcpAdminRoutes(deps: { proxy: McpProxy; changed: (wid: string) => Promise<void> }): ServerRoute[] {
  const { proxy, changed } = deps;
  const read = { tokenScope: 'mcp:read' };
  const write = { tokenScope: 'mcp:write' };
  const token = (request: Request) => machineCaller(request);
  const named = (request: Request) => request.params as { name: string; tool?: string };
  return [
    {
      method: 'GET',
      path: '/v1/admin/mcp-servers',
      options: { auth: SERVICE_TOKEN, plugins: { svc: read } },
      async handler(request) {
        const wid = token(request).workspaceId;
        return { data: (await proxy.listAll(wid)).map((x) => proxy.view(x)), next: null };
      },
    },
    {
      method: 'POST',
      path: '/v1/admin/mcp-servers',
      options: {
        auth: SERVICE_TOKEN,
        plugins: { svc: write },
        validate: { payload: addServerSchema },
      },
      async handler(request, h) {
        const c = token(request);
        const added = await proxy.add(c.workspaceId, request.payload as never, c.actor);
        await changed(c.workspaceId);
        return h.response(added).code(201);
      },
    },
    {
      method: 'GET',
      path: '/v1/admin/mcp-servers/{name}',
      options: {
        auth: SERVICE_TOKEN,
        plugins: { svc: { ...read, errors: ['not_found'] } },
        validate: { params: Joi.object({ name: serverName }) },
      },
      async handler(request) {
        const wid = token(request).workspaceId;
        // The tools' listing is the test: it reaches the upstream now (and is 404 for no such server).
        const { reachable, problem, tools } = await proxy.pinnedTools(wid, named(request).name);
        const server = await proxy.find(wid, named(request).name);
        const pending = tools.filter((x) => x.status !== 'approved').length;
        return { ...proxy.view(server), reachable, problem, tools: { total: tools.length, pending } };
      },
    },
    {
      method: 'DELETE',
      path: '/v1/admin/mcp-servers/{name}',
      options: {
        auth: SERVICE_TOKEN,
        plugins: { svc: { ...write, errors: ['not_found'] } },
        validate: { params: Joi.object({ name: serverName }) },
      },
      async handler(request) {
        const c = token(request);
        await proxy.remove(c.workspaceId, named(request).name, c.actor);
        await changed(c.workspaceId);
        return {};
      },
    },
    {
      method: 'GET',
      path: '/v1/admin/mcp-servers/{name}/tools',
      options: {
        auth: SERVICE_TOKEN,
        plugins: { svc: { ...read, errors: ['not_found'] } },
        validate: { params: Joi.object({ name: serverName }) },
      },
      async handler(request) {
        const { reachable, problem, tools } = await proxy.pinnedTools(token(request).workspaceId, named(request).name);
        return { data: tools, next: null, reachable, problem };
      },
    },
    {
      method: 'POST',
      path: '/v1/admin/mcp-servers/{name}/tools/{tool}/approve',
      options: {
        auth: SERVICE_TOKEN,
        plugins: { svc: { ...write, errors: ['not_found'] } },
        validate: {
          params: Joi.object({ name: serverName, tool: toolName }),
          payload: approveToolSchema,
        },
      },
      async handler(request) {
        const c = token(request);
        const { name: server, tool } = named(request);
        const { hash, callsPerMinute } = request.payload as { hash: string; callsPerMinute?: number | null };
        return proxy.approveTool(c.workspaceId, server, tool!, hash, c.actor, callsPerMinute);
      },
    },
  ];
}
