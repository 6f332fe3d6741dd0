import type { Client } from '@modelcontextprotocol/client';
import { ProtocolError, Server, type ClientCapabilities, type Prompt } from '@modelcontextprotocol/server';
import { AppError } from '../errors/app-error.js';
import type { Gate } from '../gate/service.js';
import type { McpProxy, SessionScope, UpstreamHooks, UpstreamLink } from './proxy.js';
import type { Track } from './reuse.js';
import { callGateTool, GATE_TOOLS, GATE_TOOL_NAMES } from './tools.js';

/**
 * The MCP server one caller of protocol 2025-11-25 (or older) talks to at /mcp, on the official
 * SDK's server package (`@modelcontextprotocol/server`): the gate's tools, and the workspace's upstream MCP
 * servers behind the proxy (tools, resources, prompts, completions), for one agent.
 * Rules:
 * - A refusal (a stopped agent, an unknown tool) is a JSON-RPC error in the implementation range
 *   with `type`, `fix` and `docs` in `error.data` (docs/mcp-oauth.md); the upstreams' own errors pass
 *   through as they sent them.
 * - Within a session (`session` given) each upstream is reached through an upstream session
 *   this session opened for it (and for no other), declaring the caller's capabilities: the
 *   upstream's requests (sampling, elicitation, roots) go to the caller and its notifications
 *   (log messages, resource updates, list changes) reach the caller's stream; subscriptions and
 *   the log level are the session's. A tool call gets a client of its own attached to that
 *   upstream session, so that what the upstream sends while it runs travels on that call's
 *   stream. The upstream sessions end when this session does.
 * - Without a session nothing can come back later: upstreams are reached through the agent's own
 *   upstream sessions (never another agent's), a tool call that asks for progress streams its
 *   progress and log messages, and subscriptions are not offered.
 * - A stopped agent's tools/list names only the gate's tools, and nothing it asks reaches an
 *   upstream.
 */
export const MCP_ERROR_CODE = -32001;

export interface McpCaller {
  workspaceId: string;
  agentId: string;
}

/** What the caller declared it can do, as the upstream is told it (the parts an upstream may use). */
function mirrored(caps: ClientCapabilities | undefined): NonNullable<UpstreamHooks['capabilities']> {
  const { sampling, elicitation, roots } = caps ?? {};
  return {
    ...(sampling ? { sampling } : {}),
    ...(elicitation ? { elicitation } : {}),
    ...(roots ? { roots } : {}),
  } as never;
}

/** A handler whose refusals become JSON-RPC errors of the catalogue's shape, run under the pool's track. */
type Guarded = <A extends unknown[], R>(fn: (...args: A) => Promise<R>) => (...args: A) => Promise<R>;

/** What the handlers of one caller's server share (buildMcpServer, below). */
interface Handlers {
  mcp: Server;
  gate: Gate;
  proxy: McpProxy;
  who: McpCaller;
  /** Whether this server is a session's (subscriptions, the log level and the upstreams' requests are a session's). */
  session: boolean;
  link: UpstreamLink;
  scope: SessionScope | undefined;
  guarded: Guarded;
  /** Whether the agent is running now (a stopped one is offered only the gate's tools). */
  running: () => Promise<boolean>;
}

/**
 * One caller's server: its capabilities, its link to the upstreams (a session's own, or the
 * agent's), then its handlers, in the order of this list: tools, resources, prompts and
 * completions, the log level, the caller's roots.
 */
export function buildMcpServer(deps: {
  gate: Gate;
  proxy: McpProxy;
  who: McpCaller;
  version: string;
  baseUrl: () => string;
  /** Present for a session: given here the way to end the upstream sessions it opened (when it ends). */
  session?: { end?: () => Promise<void> };
  /** When the server is pooled (reuse.ts): its handlers run under this, so it is reused only once they settle. */
  track?: Track;
}): Server {
  const { gate, proxy, who } = deps;
  const mcp = new Server(
    { name: 'svc', version: deps.version },
    {
      capabilities: {
        tools: { listChanged: true },
        logging: {},
        completions: {},
        resources: deps.session ? { subscribe: true, listChanged: true } : { listChanged: true },
        prompts: { listChanged: true },
      },
    },
  );
  // The session's own client per upstream; what the upstream asks or says outside a tool call goes to the caller's standalone stream.
  const sessionHooks = (): UpstreamHooks => ({
    capabilities: mirrored(mcp.getClientCapabilities()),
    request: (req, signal) => mcp.request(req as never, { signal }) as Promise<Record<string, unknown>>,
    notify: (n) => {
      void mcp.notification(n as never).catch(() => {});
    },
  });
  const scope = deps.session ? proxy.sessionScope(who, sessionHooks) : undefined;
  if (deps.session && scope) deps.session.end = scope.end;
  const h: Handlers = {
    mcp,
    gate,
    proxy,
    who,
    session: deps.session !== undefined,
    link: scope ? scope.link : proxy.pooledFor(who),
    scope,
    guarded: guardedFor(who, deps.baseUrl, deps.track ?? ((run) => run())),
    running: async () => (await proxy.admitsAgent(who.workspaceId, who.agentId)).admitted,
  };
  registerTools(h);
  registerResources(h);
  registerPrompts(h);
  registerLogging(h);
  // The caller's roots changed: the upstreams this session opened are told.
  mcp.setNotificationHandler('notifications/roots/list_changed', async () => {
    for (const client of scope?.clients() ?? []) void client.then((c) => c.sendRootsListChanged()).catch(() => {});
  });
  return mcp;
}

/**
 * A handler whose refusals become JSON-RPC errors of the catalogue's shape. A request that
 * carries its principal (a pooled server's) must be this server's own caller's.
 */
function guardedFor(who: McpCaller, baseUrl: () => string, track: Track): Guarded {
  const rpcError = (err: AppError) =>
    new ProtocolError(MCP_ERROR_CODE, err.message, {
      type: err.type,
      fix: err.fix,
      docs: `${baseUrl()}/docs/errors#${err.type}`,
      ...err.details,
    });
  return (fn) =>
    async (...args) =>
      track(async () => {
        const p = (args[1] as { http?: { authInfo?: { extra?: { principal?: McpCaller } } } } | undefined)?.http
          ?.authInfo?.extra?.principal;
        if (p && (p.workspaceId !== who.workspaceId || p.agentId !== who.agentId))
          throw new Error('an MCP server was handed another caller');
        try {
          return await fn(...args);
        } catch (err) {
          if (err instanceof AppError && err.status < 500) throw rpcError(err);
          throw err;
        }
      });
}

/** tools/list (the gate's tools, and the upstreams' for a running agent) and tools/call. */
function registerTools({ mcp, gate, proxy, who, session, link, guarded, running }: Handlers): void {
  mcp.setRequestHandler(
    'tools/list',
    guarded(async () => ({
      tools: [...GATE_TOOLS, ...((await running()) ? await proxy.tools(who, link) : [])] as never,
    })),
  );

  mcp.setRequestHandler(
    'tools/call',
    guarded(async (req, ctx) => {
      if (GATE_TOOL_NAMES.has(req.params.name))
        return callGateTool(gate, who, req.params.name, req.params.arguments) as never;
      const target = await proxy.resolve(who.workspaceId, req.params.name, link);
      if (!target)
        throw new AppError('not_found', {
          message: `No tool ${req.params.name} here.`,
          fix: 'Call a tool that tools/list names.',
        });
      const token = req.params._meta?.progressToken;
      const relayed = (n: { method: string; params?: Record<string, unknown> }) => {
        void ctx.mcpReq.notify(n as never).catch(() => {});
      };
      const own: UpstreamHooks | undefined = session
        ? {
            capabilities: mirrored(mcp.getClientCapabilities()),
            request: (r, signal) => ctx.mcpReq.send(r as never, { signal }) as Promise<Record<string, unknown>>,
            notify: relayed,
          }
        : token !== undefined
          ? { notify: relayed }
          : undefined;
      return (await proxy.call(who, target, req.params.arguments, {
        signal: ctx.mcpReq.signal,
        link,
        ...(own ? { own } : {}),
        ...(token !== undefined
          ? { progress: (p) => relayed({ method: 'notifications/progress', params: { ...p, progressToken: token } }) }
          : {}),
      })) as never;
    }),
  );
}

/** resources/list, resources/templates/list, resources/read, and within a session (un)subscribe. */
function registerResources({ mcp, proxy, who, session, link, guarded }: Handlers): void {
  mcp.setRequestHandler(
    'resources/list',
    guarded(async () => ({
      resources: await proxy.all(who, 'resources', link, async (c, _s, cursor) => {
        const r = await c.listResources(cursor ? { cursor } : undefined);
        return { items: r.resources, ...(r.nextCursor ? { nextCursor: r.nextCursor } : {}) };
      }),
    })),
  );
  mcp.setRequestHandler(
    'resources/templates/list',
    guarded(async () => ({
      resourceTemplates: await proxy.all(who, 'resources', link, async (c, _s, cursor) => {
        const r = await c.listResourceTemplates(cursor ? { cursor } : undefined);
        return { items: r.resourceTemplates, ...(r.nextCursor ? { nextCursor: r.nextCursor } : {}) };
      }),
    })),
  );
  mcp.setRequestHandler(
    'resources/read',
    guarded(
      async (req, ctx) =>
        (await proxy.first(who, 'resources', link, (c) =>
          c.readResource(req.params, { signal: ctx.mcpReq.signal }),
        )) as never,
    ),
  );
  if (session) {
    mcp.setRequestHandler(
      'resources/subscribe',
      guarded(async (req) =>
        proxy.first(who, 'resources', link, async (c) =>
          c.getServerCapabilities()?.resources?.subscribe ? c.subscribeResource(req.params) : undefined,
        ),
      ),
    );
    mcp.setRequestHandler(
      'resources/unsubscribe',
      guarded(async (req) =>
        proxy.first(who, 'resources', link, async (c) =>
          c.getServerCapabilities()?.resources?.subscribe ? c.unsubscribeResource(req.params) : undefined,
        ),
      ),
    );
  }
}

/** prompts/list, prompts/get and completion/complete (a prompt's arguments, or a resource's). */
function registerPrompts({ mcp, proxy, who, link, guarded }: Handlers): void {
  mcp.setRequestHandler(
    'prompts/list',
    guarded(async () => ({
      prompts: await proxy.all<Prompt>(who, 'prompts', link, async (c, server, cursor) => {
        const r = await c.listPrompts(cursor ? { cursor } : undefined);
        return {
          items: r.prompts.map((p) => ({ ...p, name: proxy.exposed(server, p.name) })),
          ...(r.nextCursor ? { nextCursor: r.nextCursor } : {}),
        };
      }),
    })),
  );
  /** The upstream prompt behind an exposed name: a prefixed one directly, else the first unprefixed upstream that has it. */
  const onPrompt = async <T>(name: string, ask: (c: Client, prompt: string) => Promise<T>) => {
    const target = await proxy.promptTarget(who.workspaceId, name);
    return proxy.first(
      who,
      'prompts',
      link,
      async (c, server) => {
        if (target) return server.name === target.server.name ? ask(c, target.prompt) : undefined;
        return server.unprefixed ? ask(c, name) : undefined;
      },
      () => new ProtocolError(-32602, `No prompt ${name} here.`),
    );
  };
  mcp.setRequestHandler(
    'prompts/get',
    guarded(
      async (req, ctx) =>
        (await onPrompt(req.params.name, (c, prompt) =>
          c.getPrompt({ ...req.params, name: prompt }, { signal: ctx.mcpReq.signal }),
        )) as never,
    ),
  );

  mcp.setRequestHandler(
    'completion/complete',
    guarded(async (req) => {
      const { ref } = req.params;
      if (ref.type === 'ref/prompt')
        return onPrompt(ref.name, (c, prompt) => c.complete({ ...req.params, ref: { ...ref, name: prompt } }));
      return proxy.first(who, 'completions', link, (c) => c.complete(req.params));
    }),
  );
}

/**
 * logging/setLevel: the log level is the session's, and each upstream that logs is told it.
 * Without a session no log message could reach the caller later, and the shared clients are
 * not the caller's to set.
 */
function registerLogging({ mcp, proxy, who, session, link, guarded, running }: Handlers): void {
  mcp.setRequestHandler(
    'logging/setLevel',
    guarded(async (req) => {
      if (!session || !(await running())) return {};
      await Promise.all(
        (await proxy.list(who.workspaceId)).map(async (server) => {
          try {
            const c = await link(server);
            if (c.getServerCapabilities()?.logging) await c.setLoggingLevel(req.params.level);
          } catch {
            // An upstream that cannot be reached logs nothing; the others are still told.
          }
        }),
      );
      return {};
    }),
  );
}
