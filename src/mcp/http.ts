import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server as HapiServer, Plugin, Request, ResponseToolkit } from '@hapi/hapi';
import {
  isInitializeRequest,
  WebStandardStreamableHTTPServerTransport,
  type AuthInfo,
  type Server,
} from '@modelcontextprotocol/server';
import { AppError } from '../errors/app-error.js';
import type { Gate } from '../gate/service.js';
import { AGENT_KEY, caller } from '../http/auth/callers.js';
import { sessionStrategies } from '../http/auth/session.js';
import type { Guards } from '../http/guards.js';
import type { McpProxy } from './proxy.js';
import { mcpAdminRoutes } from './admin/http.js';
import { answerWith, createModernHandler, isModernRequest } from './modern.js';
import { JsonExchange } from './json-exchange.js';
import { createServerPool, type ServerPool } from './reuse.js';
import { buildMcpServer } from './server.js';
import { createSessions, newSessionId, type Principal, type Session, type Sessions } from './sessions.js';
import { GATE_TOOL_NAMES } from './tools.js';
import { SCOPES_SUPPORTED } from '../oauth/scopes.js';
import { PUBLIC_CORS } from '../oauth/cors.js';
import type { RateLimiter } from '../http/rate-limit.js';
import { limitGate } from './tool-guard.js';
import { mcpCors } from './cors.js';
import { credentialRoutes } from './credentials/http.js';
import { serverRoutes } from './servers/http.js';

/**
 * The MCP server at /mcp (docs/mcp-oauth.md): JSON-RPC over Streamable HTTP with the
 * official SDK's server package (`@modelcontextprotocol/server`), mounted through `request.raw`
 * with `h.abandon` once our own agent-key strategy has authenticated the caller (STYLE rule 13).
 * Both protocol eras are served here: a request of protocol 2026-07-28 (its per-request
 * envelope) goes to the SDK's per-request handler (modern.ts); everything else is 2025-11-25 (or
 * older) and is served below, with its sessions, by the SDK's web-standard transport.
 * Rules:
 * - Host must name this deployment, and Origin (when a browser sends one) this deployment or one
 *   of `mcp.allowedOrigins`: a page on another origin cannot reach /mcp through a rebound DNS
 *   name (403 forbidden). The allowed origins get CORS (cors.ts).
 * - The gate's tools count against the agent's per-minute gate limit, as the HTTP routes do
 *   (tool-guard.ts).
 * - No credential: 401 with `WWW-Authenticate: Bearer resource_metadata=…` (the strategy adds
 *   it on this route), pointing at the protected-resource metadata (RFC 9728).
 * - `initialize` opens a session (sessions.ts): its id comes back in `Mcp-Session-Id`, and the
 *   requests, answers and streams (GET) that carry it reach the same server. DELETE ends it; an
 *   id that is unknown, ended or another credential's is `404 not_found`.
 * - A request without a session id is served on its own (stateless): the gate's tools and the
 *   upstreams' work the same, but nothing can come back to it later. GET and DELETE without
 *   one are `405 method_not_allowed`. One JSON-RPC request answered as JSON goes to its server
 *   without the web-standard bridge (json-exchange.ts); anything else takes the SDK's transport.
 * - Every request is authenticated anew: a revoked key or an ended connection cannot go on
 *   using a session it opened.
 */
type Handle = (req: IncomingMessage, res: ServerResponse, body?: unknown) => Promise<void>;
type Cors = ReturnType<typeof mcpCors>;

/** What the handlers of /mcp share. */
interface Transport {
  gate: Gate;
  proxy: McpProxy;
  version: string;
  baseUrl: () => string;
  sessions: Sessions;
  /** Servers for requests without a session, one principal's each, reused (reuse.ts). */
  statelessServers: ServerPool<Server>;
  /** A request of the 2026-07-28 revision, served by the SDK's per-request handler. */
  serveModern(req: IncomingMessage, res: ServerResponse, principal: Principal, body: unknown): Promise<void>;
  /** Host and Origin name this deployment (or an allowed origin), else 403 forbidden. */
  checkHost(request: Request): void;
}

/**
 * CORS for the allowed origins: before anything answers (authentication included), so that
 * whatever /mcp answers an allowed origin, hapi's response or the MCP transport's own, is
 * readable by its page; and Origin added to the Vary of hapi's own answers.
 */
function addCors(server: HapiServer, cors: Cors): void {
  server.ext('onRequest', (request, h) => {
    const origin = request.headers.origin;
    if (request.path === '/mcp' && cors.allows(origin))
      for (const [name, value] of Object.entries(cors.answerHeaders(origin))) request.raw.res.setHeader(name, value);
    return h.continue;
  });
  server.ext('onPreResponse', (request, h) => {
    const response = request.response;
    if (request.path === '/mcp' && cors.allows(request.headers.origin)) {
      if ('isBoom' in response && response.isBoom) response.output.headers.vary = 'origin';
      else if (!('isBoom' in response)) response.vary('origin');
    }
    return h.continue;
  });
}

/** The deployment's own URL, parsed again only when baseUrl() changes. */
function ownUrl(baseUrl: () => string): () => URL {
  let own: URL | undefined;
  return () => {
    const base = baseUrl();
    if (own?.href !== base && own?.href !== `${base}/`) own = new URL(base);
    return own;
  };
}

function hostCheck(ownOf: () => URL, cors: Cors): (request: Request) => void {
  return (request) => {
    const own = ownOf();
    // Compared as URLs, so that an explicit default port (example.com:443) is the same host
    // (a Host header spelled exactly as ours needs no parsing).
    let host: string | null = request.headers.host === own.host ? own.host : null;
    if (host === null)
      try {
        host = new URL(`${own.protocol}//${String(request.headers.host)}`).host;
      } catch {
        host = null;
      }
    if (host !== own.host) {
      throw new AppError('forbidden', {
        message: `Host ${String(request.headers.host)} is not this deployment (${own.host}).`,
        fix: 'Connect to the address the operator published (baseUrl).',
      });
    }
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== own.origin && !cors.allows(origin)) {
      throw new AppError('forbidden', {
        message: `Origin ${origin} may not call this MCP server.`,
        fix: 'Call /mcp from a client, or from a page on an origin the operator lists in mcp.allowedOrigins.',
      });
    }
  };
}

/** A session for this principal: its server, its transport, the upstream clients it opens. */
async function openSession(t: Transport, principal: Principal): Promise<Session & { handle: Handle }> {
  const { gate, proxy, version, baseUrl, sessions } = t;
  const upstreams: { end?: () => Promise<void> } = {};
  const mcp = buildMcpServer({ gate, proxy, who: principal, version, baseUrl, session: upstreams });
  const state = { id: '', principal, lastSeen: Date.now(), open: 0 };
  const closeLinks = async () => upstreams.end?.();
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: newSessionId,
    onsessioninitialized: (id) => {
      state.id = id;
      sessions.add(entry);
    },
  });
  const entry: Session & { handle: Handle } = Object.assign(state, {
    handle: (req: IncomingMessage, res: ServerResponse, body?: unknown) =>
      answerWith((r) => transport.handleRequest(r, { parsedBody: body }), req, res, `${baseUrl()}/mcp`),
    close: async () => {
      await transport.close();
    },
  });
  // However it ends (DELETE, the sweep, shutdown), the upstream sessions it opened end with it.
  mcp.onclose = () => {
    if (state.id) sessions.forget(state.id);
    void closeLinks();
  };
  await mcp.connect(transport as never);
  return entry;
}

/**
 * One request served on its own: a transport for it alone, and a server of its principal's
 * (an idle one reused, else a new one), which is free again once the request has ended.
 */
async function stateless(t: Transport, request: Request, principal: Principal): Promise<Handle> {
  const { gate, proxy, version, baseUrl } = t;
  const mcp = t.statelessServers.take(principal, (track) =>
    buildMcpServer({ gate, proxy, who: principal, version, baseUrl, track }),
  );
  // A proxied tool call that asks for progress answers as a stream, so that the upstream's
  // progress and log messages reach the caller while it runs; everything else answers JSON.
  const body = request.payload as {
    method?: string;
    params?: { name?: string; _meta?: { progressToken?: unknown } };
  } | null;
  const streamed =
    body?.method === 'tools/call' &&
    typeof body.params?.name === 'string' &&
    !GATE_TOOL_NAMES.has(body.params.name) &&
    body.params._meta?.progressToken !== undefined;
  const authInfo: AuthInfo = { token: '', clientId: principal.agentId, scopes: [], extra: { principal } };
  // The plainest request (one JSON-RPC request answered as JSON) skips the web-standard bridge.
  const plain = streamed ? undefined : JsonExchange.fits(request.raw.req.headers, body);
  if (plain) {
    const exchange = new JsonExchange();
    await mcp.connect(exchange);
    request.raw.res.once('close', () => {
      void exchange.close();
    });
    return async (req, res) => {
      const answer = await exchange.answer(plain, req.headers, authInfo);
      if (!answer || res.destroyed) return;
      const text = JSON.stringify(answer.message);
      res
        .writeHead(answer.status, {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(text)),
        })
        .end(text);
      void exchange.close();
    };
  }
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: !streamed,
  });
  await mcp.connect(transport as never);
  request.raw.res.once('close', () => {
    void transport.close();
  });
  return (req, res, b) =>
    answerWith((r) => transport.handleRequest(r, { parsedBody: b, authInfo }), req, res, `${baseUrl()}/mcp`);
}

/** POST, GET and DELETE /mcp: the request handed to the SDK through `request.raw` (`h.abandon`). */
function mount(t: Transport) {
  return async (request: Request, h: ResponseToolkit) => {
    t.checkHost(request);
    const c = caller(request, 'agent');
    const principal: Principal = { workspaceId: c.workspaceId, agentId: c.agent.id, credentialId: c.key.id };
    const { req, res } = request.raw;
    const payload = request.payload ?? undefined;
    // A request of the 2026-07-28 revision (its _meta envelope) is served statelessly by the SDK's handler.
    if (request.method === 'post' && isModernRequest(request.method, req.headers, payload)) {
      await t.serveModern(req, res, principal, payload);
      return h.abandon;
    }
    const sid = request.headers['mcp-session-id'];
    if (typeof sid === 'string' && sid !== '') {
      const found = t.sessions.find(sid, principal) as (Session & { handle: Handle }) | undefined;
      if (!found)
        throw new AppError('not_found', {
          message: 'No such MCP session: it ended, or was never opened with this credential.',
          fix: 'Send initialize again (without Mcp-Session-Id) to open a new session.',
        });
      res.once('close', t.sessions.enter(found));
      await found.handle(req, res, payload);
      return h.abandon;
    }
    if (request.method === 'post' && isInitializeRequest(payload)) {
      const opened = await openSession(t, principal);
      await opened.handle(req, res, payload);
      return h.abandon;
    }
    if (request.method !== 'post') {
      throw new AppError('method_not_allowed', {
        message: `${request.method.toUpperCase()} /mcp needs the Mcp-Session-Id of a session.`,
        fix: 'Send initialize first and use the session id it answers with; or POST requests without a session.',
        headers: { allow: 'POST' },
      });
    }
    await (
      await stateless(t, request, principal)
    )(req, res, payload);
    return h.abandon;
  };
}

/** A browser's preflight: answered for an allowed origin only (cors.ts). */
function preflight(cors: Cors, ownOf: () => URL) {
  return (request: Request, h: ResponseToolkit) => {
    const origin = request.headers.origin;
    if (!cors.allows(origin))
      throw new AppError('forbidden', {
        message: `Origin ${typeof origin === 'string' ? origin : '(none)'} may not call this MCP server.`,
        fix: `The operator of ${ownOf().host} lists the page's origin in mcp.allowedOrigins.`,
      });
    const response = h.response().code(204);
    for (const [name, value] of Object.entries(
      cors.preflightHeaders(request.headers['access-control-request-headers']),
    ))
      response.header(name, value);
    return response;
  };
}

/** The protected resource's metadata (RFC 9728). */
function resourceMetadata(baseUrl: () => string) {
  return () => {
    const base = baseUrl();
    return {
      resource: `${base}/mcp`,
      authorization_servers: [base],
      bearer_methods_supported: ['header'],
      scopes_supported: [...SCOPES_SUPPORTED],
      resource_name: 'svc MCP server',
    };
  };
}

export const mcpRoutes: Plugin<{
  gate: Gate;
  /** The gate's per-agent limiter, shared with its HTTP routes. */
  gateLimiter: RateLimiter;
  /** Web origins whose pages may call /mcp (`mcp.allowedOrigins`). */
  allowedOrigins: readonly string[];
  proxy: McpProxy;
  baseUrl: () => string;
  version: string;
  production: boolean;
  guards: Guards;
  stillValid: (p: Principal) => Promise<boolean>;
}> = {
  name: 'svc-mcp',
  register(server, deps) {
    const { proxy, baseUrl, version, production, guards, stillValid } = deps;
    const gate = limitGate(deps.gate, deps.gateLimiter);
    const cors = mcpCors(deps.allowedOrigins);
    addCors(server, cors);
    const session = { strategies: sessionStrategies(production) };
    const modern = createModernHandler({ gate, proxy, version, baseUrl });
    const ownOf = ownUrl(baseUrl);
    const transport: Transport = {
      gate,
      proxy,
      version,
      baseUrl,
      sessions: createSessions({ stillValid }),
      statelessServers: createServerPool<Server>(),
      serveModern: (req, res, principal, body) => modern.serve(req, res, principal, body),
      checkHost: hostCheck(ownOf, cors),
    };
    server.ext('onPostStop', async () => {
      transport.statelessServers.clear();
      await modern.close();
      await transport.sessions.closeAll();
      await proxy.close();
    });
    const changed = (w: string) => modern.changed(w);
    const metadata = resourceMetadata(baseUrl);
    const options = { auth: AGENT_KEY, plugins: { svc: { mcpChallenge: true, forwarded: true } } };
    // Each agent's own upstream credentials (credentials/http.ts).
    server.route(credentialRoutes({ proxy, guards, baseUrl, session }));
    const handler = mount(transport);
    server.route([
      { method: 'POST', path: '/mcp', options, handler },
      { method: 'GET', path: '/mcp', options, handler },
      { method: 'DELETE', path: '/mcp', options, handler },
      { method: 'OPTIONS', path: '/mcp', options: { auth: false }, handler: preflight(cors, ownOf) },
    ]);
    // The workspace's upstream servers in the console (servers/http.ts).
    server.route(serverRoutes({ proxy, guards, session, changed }));
    server.route([
      {
        method: 'GET',
        path: '/.well-known/oauth-protected-resource/mcp',
        options: { auth: false, cors: PUBLIC_CORS },
        handler: () => metadata(),
      },
      {
        method: 'GET',
        path: '/.well-known/oauth-protected-resource',
        options: { auth: false, cors: PUBLIC_CORS },
        handler: () => metadata(),
      },
    ]);
    server.route(mcpAdminRoutes({ proxy, changed }));
    // Other plugins that change a workspace's servers (svc apply) tell the connected clients too.
    server.expose('changed', changed);
  },
};
