import type { Plugin, Request, ResponseToolkit } from '@hapi/hapi';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { AppError } from '../errors/app-error.js';
import type { Gate } from '../gate/service.js';
import { AGENT_KEY, caller } from '../http/auth/callers.js';
import { callGateTool, GATE_TOOLS, GATE_TOOL_NAMES } from './tools.js';

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

export const mcpRoutes: Plugin<{ gate: Gate; baseUrl: () => string; version: string }> = {
  name: 'svc-mcp',
  register(server, { gate, baseUrl, version }) {
    const metadata = () => {
      const base = baseUrl();
      return { resource: `${base}/mcp`, authorization_servers: [base], bearer_methods_supported: ['header'], resource_name: 'svc MCP server' };
    };

    const checkHost = (request: Request): void => {
      const own = new URL(baseUrl());
      if (request.headers.host !== own.host) {
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
      const mcp = new Server({ name: 'svc', version }, { capabilities: { tools: {} } });
      mcp.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [...GATE_TOOLS] as never }));
      mcp.setRequestHandler(CallToolRequestSchema, async (req) => {
        if (!GATE_TOOL_NAMES.has(req.params.name)) {
          const base = baseUrl();
          throw new McpError(MCP_ERROR_CODE, `No tool ${req.params.name} here.`, { type: 'not_found', fix: 'Call a tool that tools/list names.', docs: `${base}/docs/errors#not_found` });
        }
        return callGateTool(gate, who, req.params.name, req.params.arguments) as never;
      });
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
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
      { method: 'GET', path: '/.well-known/oauth-protected-resource/mcp', options: { auth: false }, handler: () => metadata() },
      { method: 'GET', path: '/.well-known/oauth-protected-resource', options: { auth: false }, handler: () => metadata() },
    ]);
  },
};
