import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  classifyInboundRequest,
  CLIENT_CAPABILITIES_META_KEY,
  MissingRequiredClientCapabilityError,
  createMcpHandler,
  inputRequired,
  ProtocolError,
  SERVER_INFO_META_KEY,
  Server,
  type AuthInfo,
  type McpHttpHandler,
  type Prompt,
} from '@modelcontextprotocol/server';
import { AppError } from '../errors/app-error.js';
import type { Gate } from '../gate/service.js';
import type { Client } from '@modelcontextprotocol/client';
import type { McpServerRecord } from './records.js';
import type { McpProxy, UpstreamLink } from './proxy.js';
import { MCP_ERROR_CODE } from './server.js';
import type { Principal } from './sessions.js';
import { callGateTool, GATE_TOOLS, GATE_TOOL_NAMES } from './tools.js';
import { createServerPool, principalKey, type Track } from './reuse.js';
import { answerWith } from './answer-with.js';
import { paramHeaderMismatch } from './param-headers.js';

export { answerWith } from './answer-with.js';

/**
 * The 2026-07-28 protocol at /mcp (the "modern" era): no `initialize`, a `server/discover`
 * advertisement, the protocol version, client info and capabilities in every request's `_meta`
 * envelope, and nothing kept between requests. Served by the official SDK's per-request handler
 * (`createMcpHandler` of `@modelcontextprotocol/server`), which answers the envelope's errors as
 * the revision names them (-32601 unknown method, -32602 bad params, -32020 a missing or
 * malformed envelope, -32021 a capability the client did not declare, -32022 an unsupported
 * version), each with the request's own `id`.
 * Rules:
 * - A request is modern when it claims the envelope (`MCP-Protocol-Version` 2026-07-28 or later,
 *   `_meta["io.modelcontextprotocol/protocolVersion"]`); everything else (an `initialize`, a
 *   request of a 2025 session, a 2025 stateless request) stays on the 2025 path of http.ts,
 *   which keeps its sessions. The SDK's own classifier decides, so the two never disagree.
 * - Every request is served by a server of the authenticated caller's own (reuse.ts: built once
 *   per principal and reused, one request at a time): the gate's tools, and the workspace's
 *   upstream tools, resources, prompts and completions through the proxy's shared clients,
 *   every proxied tool call gated as on the 2025 path.
 * - Refusals are JSON-RPC errors of the catalogue's shape (`type`, `fix`, `docs` in `data`);
 *   an upstream's own errors pass through with their code.
 */
/** Whether this request belongs to the 2026-07-28 era (judged by the SDK's own classifier). */
export function isModernRequest(method: string, headers: IncomingMessage['headers'], body: unknown): boolean {
  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  return (
    classifyInboundRequest({
      httpMethod: method.toUpperCase(),
      protocolVersionHeader: one(headers['mcp-protocol-version']),
      mcpMethodHeader: one(headers['mcp-method']),
      body,
    }).kind !== 'legacy'
  );
}

/** An error of the v1 SDK, or anything else carrying a JSON-RPC code, as the v2 SDK's error. */
function asProtocolError(err: unknown, baseUrl: () => string): unknown {
  if (err instanceof AppError && err.status < 500)
    return new ProtocolError(MCP_ERROR_CODE, err.message, {
      type: err.type,
      fix: err.fix,
      docs: `${baseUrl()}/docs/errors#${err.type}`,
      ...err.details,
    });
  if (err instanceof Error && typeof (err as { code?: unknown }).code === 'number') {
    const { code, data } = err as Error & { code: number; data?: unknown };
    // An upstream that needs a capability the caller did not declare (the proxy declares the
    // caller's own upstream): the caller is told so, as HTTP 400, in its own terms.
    if (code === -32021)
      return new MissingRequiredClientCapabilityError(
        data as ConstructorParameters<typeof MissingRequiredClientCapabilityError>[0],
        err.message.replace(/^MCP error -?\d+: /, ''),
      );
    // The v1 error's message carries its "MCP error N: " prefix; the wire message is the rest.
    return new ProtocolError(code, err.message.replace(/^MCP error -?\d+: /, ''), data);
  }
  return err;
}

/**
 * An upstream's answer as this server's: the upstream's own identity (`serverInfo` in the
 * result's `_meta`) is left out, so that the SDK stamps this server's.
 */
function ours<T>(result: T): T {
  const meta = (result as { _meta?: Record<string, unknown> } | null)?._meta;
  if (!meta || !(SERVER_INFO_META_KEY in meta)) return result;
  const { [SERVER_INFO_META_KEY]: _upstream, ...rest } = meta;
  return { ...result, _meta: rest };
}

/** A proxied tool's name as a 2026-07-28 request gave it, and its upstream (undefined: none has it). */
type Resolved = { name: string; target: { server: McpServerRecord; tool: string } | undefined };

/**
 * The requestState of an authorize_action waiting for a person: the action's id. It needs no
 * seal: get_action answers only the calling agent's own actions, so a forged id names nothing.
 */
const APPROVAL_STATE = 'svc-approval:';

/**
 * A request reaches only the server of its own principal (reuse.ts keys the pool so); should it
 * ever not, it is refused before anything is read or sent.
 */
function sameCaller(authInfo: AuthInfo | undefined, who: Principal): void {
  const p = (authInfo?.extra as { principal?: Principal } | undefined)?.principal;
  if (p && principalKey(p) !== principalKey(who)) throw new Error('an MCP server was handed another caller');
}

/** What the caller declared it can answer, as its upstream is told (the parts an upstream may ask for). */
function mirrored(caps: Record<string, unknown>): Record<string, object> {
  const out: Record<string, object> = {};
  for (const name of ['sampling', 'elicitation', 'roots'])
    if (caps[name] !== undefined && caps[name] !== null) out[name] = caps[name] as object;
  return out;
}

/** A handler whose refusals become JSON-RPC errors, run under the pool's track, for this server's own caller only. */
type Guarded = <A extends unknown[], R>(fn: (...args: A) => Promise<R>) => (...args: A) => Promise<R>;

/** What this request's caller declared and answered (its envelope), as the upstream is to be told. */
interface Caller {
  capabilities: Record<string, object>;
  input: { inputResponses?: Record<string, unknown>; requestState?: string };
}
type CallerCtx = {
  mcpReq: { envelope?: unknown; inputResponses?: Record<string, unknown>; requestState: <T>() => T | undefined };
};

function callerOf(meta: Record<string, unknown> | undefined, ctx: CallerCtx): Caller {
  const envelope = { ...meta, ...(ctx.mcpReq.envelope as object | undefined) } as Record<string, unknown>;
  const state = ctx.mcpReq.requestState<unknown>();
  return {
    capabilities: mirrored((envelope[CLIENT_CAPABILITIES_META_KEY] ?? {}) as Record<string, unknown>),
    input: {
      ...(ctx.mcpReq.inputResponses ? { inputResponses: ctx.mcpReq.inputResponses } : {}),
      ...(typeof state === 'string' ? { requestState: state } : {}),
    },
  };
}

/** What the handlers of one caller's modern server share (buildModernServer, below). */
interface Handlers {
  mcp: Server;
  gate: Gate;
  proxy: McpProxy;
  who: Principal;
  baseUrl: () => string;
  /** The agent's own sessions of the upstreams, in the modern era. */
  link: UpstreamLink;
  guarded: Guarded;
  /** Whether the agent is running now (a stopped one is offered only the gate's tools). */
  running: () => Promise<boolean>;
}

/**
 * One caller's modern server: its capabilities, then its handlers in the order of this list:
 * tools (the gate's authorize_action answered input_required when a person must decide),
 * resources, prompts and completions.
 */
export function buildModernServer(deps: {
  gate: Gate;
  proxy: McpProxy;
  who: Principal;
  version: string;
  baseUrl: () => string;
  /** When the server is pooled (reuse.ts): its handlers run under this, so it is reused only once they settle. */
  track?: Track;
}): Server {
  const { gate, proxy, who } = deps;
  const mcp = new Server(
    { name: 'svc', version: deps.version },
    {
      capabilities: {
        tools: { listChanged: true },
        completions: {},
        resources: { listChanged: true },
        prompts: { listChanged: true },
      },
    },
  );
  const track: Track = deps.track ?? ((run) => run());
  const h: Handlers = {
    mcp,
    gate,
    proxy,
    who,
    baseUrl: deps.baseUrl,
    link: proxy.pooledFor(who, 'modern'),
    guarded:
      (fn) =>
      async (...args) =>
        track(async () => {
          try {
            sameCaller((args[1] as { http?: { authInfo?: AuthInfo } } | undefined)?.http?.authInfo, who);
            return await fn(...args);
          } catch (err) {
            throw asProtocolError(err, deps.baseUrl);
          }
        }),
    running: async () => (await proxy.admitsAgent(who.workspaceId, who.agentId)).admitted,
  };
  registerTools(h);
  registerResources(h);
  registerPrompts(h);
  return mcp;
}

/**
 * authorize_action for a 2026-07-28 caller: a decision that waits for a person is answered as
 * input_required when the caller can show a URL (elicitation in URL mode): the person is sent
 * to the console's approvals, and the caller's retry (with the requestState naming the action)
 * answers the decision once made, or asks again while it waits. A caller that cannot gets the
 * pending action, as on 2025, and polls get_action.
 */
async function authorize({ gate, who, baseUrl }: Handlers, args: Record<string, unknown> | undefined, caller: Caller) {
  const state = caller.input.requestState;
  const result = state?.startsWith(APPROVAL_STATE)
    ? await callGateTool(gate, who, 'get_action', { id: state.slice(APPROVAL_STATE.length) })
    : await callGateTool(gate, who, 'authorize_action', args);
  const action = result.structuredContent as { id?: string; decision?: string; approvalId?: string } | undefined;
  const elicitation = caller.capabilities.elicitation as { url?: object } | undefined;
  if (result.isError || action?.decision !== 'review' || elicitation?.url === undefined) return result;
  return inputRequired({
    inputRequests: {
      approval: inputRequired.elicitUrl({
        message: `A person must decide on action ${action.id} (approval ${action.approvalId}) before it may go ahead. Open the approvals to decide, then continue.`,
        url: `${baseUrl()}/console/approvals`,
      }),
    },
    requestState: `${APPROVAL_STATE}${action.id}`,
  });
}

/** tools/list and tools/call: the gate's tools, and the upstreams' gated as on the 2025 path. */
function registerTools(h: Handlers): void {
  const { mcp, gate, proxy, who, link, guarded, running } = h;
  mcp.setRequestHandler(
    'tools/list',
    guarded(async () => ({
      tools: [...GATE_TOOLS, ...((await running()) ? await proxy.tools(who, link) : [])] as never,
    })),
  );

  mcp.setRequestHandler(
    'tools/call',
    guarded(async (req, ctx) => {
      const { name } = req.params;
      if (name === 'authorize_action')
        return (await authorize(h, req.params.arguments, callerOf(req.params._meta, ctx))) as never;
      if (GATE_TOOL_NAMES.has(name)) return callGateTool(gate, who, name, req.params.arguments) as never;
      // Resolved once per request: the Mcp-Param-* check (serve, below) already did, for this name.
      const early = (ctx.http?.authInfo?.extra as { resolved?: Resolved } | undefined)?.resolved;
      const target = early?.name === name ? early.target : await proxy.resolve(who.workspaceId, name, link);
      if (!target)
        throw new AppError('not_found', {
          message: `No tool ${name} here.`,
          fix: 'Call a tool that tools/list names.',
        });
      const token = req.params._meta?.progressToken;
      // The upstream is told the caller's capabilities, so that what it asks for (input_required)
      // is what the caller can answer; the caller's answers and state go back to it unchanged.
      const caller = callerOf(req.params._meta, ctx);
      return ours(
        await proxy.call(who, target, req.params.arguments, {
          era: 'modern',
          own: { capabilities: caller.capabilities },
          input: caller.input,
          signal: ctx.mcpReq.signal,
          ...(token !== undefined
            ? {
                progress: (p) => {
                  void ctx.mcpReq
                    .notify({ method: 'notifications/progress', params: { ...p, progressToken: token } })
                    .catch(() => {});
                },
              }
            : {}),
        }),
      ) as never;
    }),
  );
}

/**
 * resources/list, resources/templates/list and resources/read. A read may be answered with
 * input_required: it reaches the upstreams on the agent's sessions declaring the caller's
 * capabilities.
 */
function registerResources({ mcp, proxy, who, link, guarded }: Handlers): void {
  mcp.setRequestHandler(
    'resources/list',
    guarded(async () => ({
      resources: (await proxy.all(who, 'resources', link, async (c, _s, cursor) => {
        const r = await c.listResources(cursor ? { cursor } : undefined);
        return { items: r.resources, ...(r.nextCursor ? { nextCursor: r.nextCursor } : {}) };
      })) as never,
    })),
  );
  mcp.setRequestHandler(
    'resources/templates/list',
    guarded(async () => ({
      resourceTemplates: (await proxy.all(who, 'resources', link, async (c, _s, cursor) => {
        const r = await c.listResourceTemplates(cursor ? { cursor } : undefined);
        return { items: r.resourceTemplates, ...(r.nextCursor ? { nextCursor: r.nextCursor } : {}) };
      })) as never,
    })),
  );
  mcp.setRequestHandler(
    'resources/read',
    guarded(async (req, ctx) => {
      const caller = callerOf(req.params._meta, ctx);
      return ours(
        await proxy.first(who, 'resources', proxy.pooledFor(who, 'modern', caller.capabilities), (c) =>
          c.readResource({ uri: req.params.uri, ...caller.input } as never, {
            signal: ctx.mcpReq.signal,
            allowInputRequired: true,
          }),
        ),
      ) as never;
    }),
  );
}

/**
 * prompts/list, prompts/get (which may be answered with input_required, so it reaches the
 * upstreams on the agent's sessions declaring the caller's capabilities) and
 * completion/complete.
 */
function registerPrompts({ mcp, proxy, who, link, guarded }: Handlers): void {
  mcp.setRequestHandler(
    'prompts/list',
    guarded(async () => ({
      prompts: (await proxy.all<Prompt>(who, 'prompts', link, async (c, server, cursor) => {
        const r = await c.listPrompts(cursor ? { cursor } : undefined);
        return {
          items: r.prompts.map((p) => ({ ...p, name: proxy.exposed(server, p.name) }) as Prompt),
          ...(r.nextCursor ? { nextCursor: r.nextCursor } : {}),
        };
      })) as never,
    })),
  );
  /** The upstream prompt behind an exposed name: a prefixed one directly, else the first unprefixed upstream that has it. */
  const onPrompt = async <T>(
    name: string,
    ask: (c: Client, prompt: string) => Promise<T>,
    through: UpstreamLink = link,
  ) => {
    const target = await proxy.promptTarget(who.workspaceId, name);
    return proxy
      .first(who, 'prompts', through, async (c, server) => {
        if (target) return server.name === target.server.name ? ask(c, target.prompt) : undefined;
        return server.unprefixed ? ask(c, name) : undefined;
      })
      .catch((err: unknown) => {
        // No upstream had it: Invalid Params, as the revision names an unknown prompt.
        if (err instanceof Error && (err as { code?: unknown }).code === -32601)
          throw new ProtocolError(-32602, `No prompt ${name} here.`);
        throw err;
      });
  };
  mcp.setRequestHandler(
    'prompts/get',
    guarded(async (req, ctx) => {
      const caller = callerOf(req.params._meta, ctx);
      return ours(
        await onPrompt(
          req.params.name,
          (c, prompt) =>
            c.getPrompt(
              { name: prompt, ...(req.params.arguments ? { arguments: req.params.arguments } : {}), ...caller.input },
              { signal: ctx.mcpReq.signal, allowInputRequired: true },
            ),
          proxy.pooledFor(who, 'modern', caller.capabilities),
        ),
      ) as never;
    }),
  );

  mcp.setRequestHandler(
    'completion/complete',
    guarded(async (req) => {
      const { ref, argument, context } = req.params;
      const params = { argument, ...(context ? { context } : {}) };
      if (ref.type === 'ref/prompt')
        return (await onPrompt(ref.name, (c, prompt) =>
          c.complete({ ...params, ref: { ...ref, name: prompt } }),
        )) as never;
      return (await proxy.first(who, 'completions', link, (c) => c.complete({ ...params, ref }))) as never;
    }),
  );
}

/**
 * The SDK's per-request handler for the modern era, for callers http.ts has authenticated: the
 * principal rides in `authInfo`, and the server the factory builds is that caller's.
 */
export function createModernHandler(deps: { gate: Gate; proxy: McpProxy; version: string; baseUrl: () => string }): {
  handler: McpHttpHandler;
  serve(req: IncomingMessage, res: ServerResponse, principal: Principal, body: unknown): Promise<void>;
  /** A workspace's upstreams changed (one added or removed): its listeners are told, and watches end. */
  changed(wid: string): Promise<void>;
  close(): Promise<void>;
} {
  // One server per principal, reused across its requests (reuse.ts): the request's principal,
  // from its authInfo, picks the pool; what else varies is read from each request.
  const servers = createServerPool<Server>();
  const handler = createMcpHandler(
    ({ authInfo }) => {
      const who = (authInfo?.extra as { principal?: Principal } | undefined)?.principal;
      if (!who) throw new Error('no principal for the MCP request');
      return servers.take(who, (track) => buildModernServer({ ...deps, who, track }));
    },
    { legacy: 'reject' },
  );
  // Each upstream a listener's workspace has is watched (a subscriptions/listen stream of its
  // own, or a 2025 upstream's event stream), so that its list changes reach our listeners.
  const watches = new Map<string, Promise<Client | undefined>>();
  const keyOf = (server: McpServerRecord) => `${server.workspaceId}/${server.name}/${server.createdAt}`;
  const relay = (n: { method: string }) => {
    if (n.method === 'notifications/tools/list_changed') handler.notify.toolsChanged();
    else if (n.method === 'notifications/prompts/list_changed') handler.notify.promptsChanged();
    else if (n.method === 'notifications/resources/list_changed') handler.notify.resourcesChanged();
  };
  const watch = (server: McpServerRecord): void => {
    const key = keyOf(server);
    if (watches.has(key)) return;
    const started: Promise<Client | undefined> = deps.proxy
      .open(server, { notify: relay }, 'modern')
      .then(async (c) => {
        c.onclose = () => {
          if (watches.get(key) === started) watches.delete(key);
        };
        if (c.getProtocolEra() === 'modern')
          await c.listen({ toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true });
        return c;
      })
      .catch(() => {
        if (watches.get(key) === started) watches.delete(key);
        return undefined;
      });
    watches.set(key, started);
  };
  const unwatch = async (key: string): Promise<void> => {
    const c = watches.get(key);
    watches.delete(key);
    await c?.then((x) => x?.close()).catch(() => {});
  };
  return {
    handler,
    async changed(wid) {
      const live = new Set((await deps.proxy.list(wid)).map(keyOf));
      for (const key of watches.keys()) if (key.startsWith(`${wid}/`) && !live.has(key)) void unwatch(key);
      handler.notify.toolsChanged();
      handler.notify.promptsChanged();
      handler.notify.resourcesChanged();
    },
    async close() {
      servers.clear();
      await Promise.all([...watches.keys()].map(unwatch));
      await handler.close();
    },
    async serve(req, res, principal, body) {
      const message = body as {
        id?: unknown;
        method?: unknown;
        params?: { name?: unknown; arguments?: unknown };
      } | null;
      if (message?.method === 'subscriptions/listen')
        for (const server of await deps.proxy.list(principal.workspaceId)) watch(server);
      // SEP-2243: a proxied tool's arguments mirrored into Mcp-Param-* headers must agree with the body.
      const name = message?.method === 'tools/call' ? message.params?.name : undefined;
      let resolved: Resolved | undefined;
      if (typeof name === 'string' && !GATE_TOOL_NAMES.has(name)) {
        const link = deps.proxy.pooledFor(principal, 'modern');
        // The tool's upstream, resolved once for the request: the call's handler is handed it.
        resolved = await deps.proxy.resolve(principal.workspaceId, name, link).then(
          (target) => ({ name, target }),
          () => undefined,
        );
        const mismatch = paramHeaderMismatch(
          resolved?.target ? await upstreamInputSchema(deps.proxy, resolved.target, link) : undefined,
          message?.params?.arguments,
          req.headers,
        );
        if (mismatch) {
          res.writeHead(400, { 'content-type': 'application/json' }).end(
            JSON.stringify({
              jsonrpc: '2.0',
              id: message?.id ?? null,
              error: { code: -32020, message: `Header mismatch: ${mismatch.message}`, data: { mismatch } },
            }),
          );
          return;
        }
      }
      const authInfo: AuthInfo = {
        token: '',
        clientId: principal.agentId,
        scopes: [],
        extra: { principal, ...(resolved ? { resolved } : {}) },
      };
      await answerWith((r) => handler.fetch(r, { authInfo, parsedBody: body }), req, res, `${deps.baseUrl()}/mcp`);
    },
  };
}

/**
 * A proxied tool's input schema as the upstream's recent listing gives it (listings.ts: listed
 * again only when older than PIN_RECHECK_MS, the listing the call's pin check then uses), or
 * undefined (no such tool, or no answer).
 */
async function upstreamInputSchema(
  proxy: McpProxy,
  target: { server: McpServerRecord; tool: string },
  link: UpstreamLink,
): Promise<unknown> {
  try {
    return await proxy.inputSchema(target, link);
  } catch {
    return undefined;
  }
}
