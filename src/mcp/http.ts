import type { Plugin, Request, ResponseToolkit } from '@hapi/hapi';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { AppError } from '../errors/app-error.js';
import type { Gate } from '../gate/service.js';
import { AGENT_KEY, caller } from '../http/auth/callers.js';
import { callGateTool, GATE_TOOLS, GATE_TOOL_NAMES } from './tools.js';
import type { McpProxy } from './proxy.js';
import Joi from 'joi';
import { actorOf } from '../http/auth/callers.js';
import { sessionStrategies } from '../http/auth/session.js';
import type { Guards } from '../http/guards.js';
import { wid } from '../http/params.js';
import type { PeopleService } from '../people/index.js';

/**
 * The MCP server at /mcp (SPEC.md 4.4, API.md 7): JSON-RPC over the SDK's Streamable HTTP
 * transport, mounted through `request.raw` with `h.abandon` once our own agent-key strategy has
 * authenticated the caller (STYLE rule 13). Stateless: each request gets its own server and
 * transport, bound to the calling agent.
 * Rules:
 * - Host (and Origin, when a browser sends one) must name this deployment: a page on another
 *   origin cannot reach /mcp through a rebound DNS name (403 forbidden).
 * - No credential: 401 with `WWW-Authenticate: Bearer resource_metadata=…` (the strategy adds
 *   it on this route), pointing at the protected-resource metadata (RFC 9728).
 * - Tools: the gate's three (tools.ts). An unknown tool is a JSON-RPC error in the
 *   implementation range with `type`, `fix` and `docs` in `error.data`.
 */
export const MCP_ERROR_CODE = -32001;

export const mcpRoutes: Plugin<{ gate: Gate; proxy: McpProxy; baseUrl: () => string; version: string; people: PeopleService; production: boolean; guards: Guards }> = {
  name: 'svc-mcp',
  register(server, { gate, proxy, baseUrl, version, people, production, guards }) {
    const session = { strategies: sessionStrategies(production) };
    /** A refusal as a JSON-RPC error: HTTP 200, the code in the implementation range, the SPEC.md fields in data. */
    const rpcError = (err: AppError) => new McpError(MCP_ERROR_CODE, err.message, { type: err.type, fix: err.fix, docs: `${baseUrl()}/docs/errors#${err.type}`, ...err.details });
    const metadata = () => {
      const base = baseUrl();
      return { resource: `${base}/mcp`, authorization_servers: [base], bearer_methods_supported: ['header'], resource_name: 'svc MCP server' };
    };

    const checkHost = (request: Request): void => {
      const own = new URL(baseUrl());
      // Compared as URLs, so that an explicit default port (example.com:443) is the same host.
      let host: string | null = null;
      try {
        host = new URL(`${own.protocol}//${String(request.headers.host)}`).host;
      } catch {
        host = null;
      }
      if (host !== own.host) {
        throw new AppError('forbidden', { message: `Host ${String(request.headers.host)} is not this deployment (${own.host}).`, fix: 'Connect to the address the operator published (baseUrl).' });
      }
      const origin = request.headers.origin;
      if (origin !== undefined && origin !== own.origin) {
        throw new AppError('forbidden', { message: `Origin ${origin} may not call this MCP server.`, fix: 'Call /mcp from a client, not from a web page on another origin.' });
      }
    };

    const mount = async (request: Request, h: ResponseToolkit) => {
      checkHost(request);
      const c = caller(request, 'agent');
      const who = { workspaceId: c.workspaceId, agentId: c.agent.id };
      const mcp = new Server({ name: 'svc', version }, { capabilities: { tools: {}, logging: {} } });
      mcp.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [...GATE_TOOLS, ...await proxy.tools(who.workspaceId)] as never }));
      mcp.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
        if (GATE_TOOL_NAMES.has(req.params.name)) return callGateTool(gate, who, req.params.name, req.params.arguments) as never;
        const target = await proxy.resolve(who.workspaceId, req.params.name);
        if (!target) throw rpcError(new AppError('not_found', { message: `No tool ${req.params.name} here.`, fix: 'Call a tool that tools/list names.' }));
        const token = req.params._meta?.progressToken;
        try {
          return await proxy.call(who, target, req.params.arguments, {
            signal: extra.signal,
            log: (params) => { void extra.sendNotification({ method: 'notifications/message', params } as never); },
            ...(token !== undefined ? { progress: (p: { progress: number; total?: number; message?: string }) => { void extra.sendNotification({ method: 'notifications/progress', params: { ...p, progressToken: token } } as never); } } : {}),
          }) as never;
        } catch (err) {
          if (err instanceof AppError && err.status < 500) throw rpcError(err);
          throw err;
        }
      });
      // A proxied tool call that asks for progress answers as a stream, so that the upstream's
      // progress and log messages reach the caller while it runs; everything else answers JSON.
      const body = request.payload as { method?: string; params?: { name?: string; _meta?: { progressToken?: unknown } } } | null;
      const streamed = body?.method === 'tools/call' && typeof body.params?.name === 'string' && !GATE_TOOL_NAMES.has(body.params.name)
        && body.params._meta?.progressToken !== undefined;
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !streamed });
      await mcp.connect(transport as never);
      request.raw.res.once('close', () => {
        void transport.close();
        void mcp.close();
      });
      await transport.handleRequest(request.raw.req, request.raw.res, request.payload ?? undefined);
      return h.abandon;
    };

    const options = { auth: AGENT_KEY, plugins: { svc: { mcpChallenge: true } } };
    server.route([
      { method: 'POST', path: '/mcp', options, handler: mount },
      { method: 'GET', path: '/mcp', options, handler: mount },
      { method: 'DELETE', path: '/mcp', options, handler: mount },
      {
        method: 'GET', path: '/api/w/{wid}/mcp-servers',
        options: { auth: session, validate: { params: Joi.object({ wid }) } },
        handler(request) {
          const { wid: w } = request.params as { wid: string };
          people.authorize(w, caller(request, 'session').user, 'mcp.manage');
          return { data: proxy.list(w).map((x) => proxy.view(x)), next: null };
        },
      },
      {
        method: 'POST', path: '/api/w/{wid}/mcp-servers',
        options: {
          auth: session, ext: { onPreAuth: guards.consoleWrite },
          validate: {
            params: Joi.object({ wid }),
            payload: Joi.object({
              name: Joi.string().required(), url: Joi.string().uri({ scheme: ['http', 'https'] }).required(),
              secret: Joi.string().max(4096).allow(null), allowTools: Joi.array().items(Joi.string().max(128)).max(500).allow(null), unprefixed: Joi.boolean(),
            }),
          },
        },
        async handler(request, h) {
          const { wid: w } = request.params as { wid: string };
          const c = caller(request, 'session');
          people.authorize(w, c.user, 'mcp.manage');
          return h.response(await proxy.add(w, request.payload as never, actorOf(c))).code(201);
        },
      },
      {
        method: 'DELETE', path: '/api/w/{wid}/mcp-servers/{name}',
        options: { auth: session, ext: { onPreAuth: guards.consoleWrite }, validate: { params: Joi.object({ wid, name: Joi.string().max(64).required() }) } },
        async handler(request) {
          const { wid: w, name } = request.params as { wid: string; name: string };
          const c = caller(request, 'session');
          people.authorize(w, c.user, 'mcp.manage');
          await proxy.remove(w, name, actorOf(c));
          return {};
        },
      },
      { method: 'GET', path: '/.well-known/oauth-protected-resource/mcp', options: { auth: false }, handler: () => metadata() },
      { method: 'GET', path: '/.well-known/oauth-protected-resource', options: { auth: false }, handler: () => metadata() },
    ]);
  },
};
