import type { Client, ClientCapabilities } from '@modelcontextprotocol/client';
import { unsealText } from '../lib/seal.js';
import { createListings } from './listings.js';
import { createPins } from './pins.js';
import { mcpServersRepo } from './repo.js';
import { createToolGuard, limitGate } from './tool-guard.js';
import { createUpstreamAuth, type UpstreamAuth } from './upstream-auth.js';
import { requestFetch } from './upstream-fetch.js';
import { createAddServer } from './proxy/add-server.js';
import { createCall, type ProxyCall } from './proxy/call.js';
import { createUpstreamConnections } from './proxy/connections.js';
import type { ProxyContext } from './proxy/context.js';
import { createFanOut, type FanOut } from './proxy/fan-out.js';
import { createToolListing, type ToolListing } from './proxy/listing.js';
import { allowed, exposed, serverKey, serverView } from './proxy/naming.js';
import { createPinnedTools, type PinnedTools } from './proxy/pinned.js';
import { createUpstreamPool } from './proxy/pool.js';
import { createServerAdmin, type ServerAdmin } from './proxy/servers.js';
import { admitsAgent } from './proxy/standing.js';
import {
  SEAL_PURPOSE,
  UPSTREAM_DEFAULTS,
  type McpProxyDeps,
  type McpServerAdded,
  type McpServerInput,
  type McpServerView,
  type ProxyCaller,
  type SessionScope,
  type UpstreamEra,
  type UpstreamHooks,
  type UpstreamLimits,
  type UpstreamLink,
} from './proxy/types.js';
import type { McpServerRecord } from './records.js';

export { MAX_CAPABILITY_SETS, PRIVATE_SETTING, UPSTREAM_DEFAULTS } from './proxy/types.js';
export type {
  CallRelay,
  McpProxyDeps,
  McpServerAdded,
  McpServerChange,
  McpServerInput,
  McpServerView,
  ProxyCaller,
  ProxyTarget,
  SessionScope,
  UpstreamEra,
  UpstreamHooks,
  UpstreamLimits,
  UpstreamLink,
  UpstreamTool,
} from './proxy/types.js';

/**
 * The MCP proxy (issue 7): a workspace's upstream MCP servers, their tools offered at /mcp as
 * `<server>__<tool>` (or unprefixed, when the server is set so).
 * Rules:
 * - Owners and admins add and remove upstream servers in the console: a name, a URL, an optional
 *   static bearer secret (sealed with the master key, never shown again) and a tool allow-list.
 * - What an upstream is sent as `Authorization` is the agent's own credential for it (an OAuth
 *   connection or a static secret), else the workspace's, else the secret given when it was added
 *   (upstream-auth.ts); a caller's own credential is never forwarded.
 * - A stopped agent's proxied call is refused before the upstream is contacted.
 * - Every proxied call is first an action of type `mcp.<server>.<tool>` at the gate, against the
 *   agent's mandate, recorded in the ledger: allowed, it is forwarded and the upstream's result
 *   (errors included) is returned as it came; denied or waiting for a person, it is a tool result
 *   with `isError: true` saying so, and the upstream never sees it.
 * - Upstreams are reached with the official SDK's client (`@modelcontextprotocol/client`), in the
 *   caller's protocol era: a 2025 caller's requests travel on a 2025 connection (`initialize`,
 *   the upstream's requests pushed back on the call's stream); a 2026-07-28 caller's on a
 *   connection that asks the upstream with `server/discover` and speaks 2026-07-28 where it can
 *   (2025 otherwise), so that an upstream's `input_required` result (elicitation, sampling,
 *   roots asked of the caller, with its `requestState`) reaches the caller as it came, and the
 *   caller's retry with `inputResponses` reaches the upstream. Where nothing needs relaying, one connected
 *   client per upstream is shared by all. A call that may receive something back (progress,
 *   log messages, or, within an MCP session, the upstream's own requests for sampling,
 *   elicitation or roots) gets a client of its own, declaring the caller's capabilities, so that
 *   whatever arrives on it belongs to that call and is relayed to the caller on that call's
 *   stream (the caller's progress token is kept; the upstream sees one of its own).
 * - Upstreams are workspace-chosen targets, reached only through the vetted, pinned dispatcher
 *   the outbound webhooks use (lib/safe-target.ts): link-local addresses (cloud metadata) are
 *   always refused, loopback and private ones unless the operator sets
 *   `mcp.allowPrivateUpstreams`. An address written in the URL is checked when the upstream is
 *   added; a name is checked at every connection, on the address actually connected to. A
 *   refusal reaches the caller as -32003 naming the rule, never an upstream's words.
 * - Resources, resource templates, prompts and completions of the upstreams are offered too, for
 *   a caller whose agent is running (a stopped agent's request is refused before any upstream
 *   is asked). Prompts are named like tools; resources keep their URIs, and a read goes to the
 *   first upstream that answers for the URI.
 * - The proxy defends (issue 20 item 6): tools/list shows an agent only the tools its mandate could
 *   allow, and prompts only of servers it could act on (narrowing.ts); each allowed tool (its
 *   description, schemas and annotations) is pinned when the server is added, and a tool whose
 *   state is not its approved one is withheld and its calls refused until an owner or admin
 *   approves it (pins.ts). A call is checked against the upstream's listing of at most
 *   PIN_RECHECK_MS ago (listings.ts), before the gate is asked, so a withheld tool's call is no
 *   action. It then meets its tool's own limit and the workspace's data-loss screening, and its
 *   authorization the agent's gate limit (tool-guard.ts).
 * - Requests to an upstream carry the active trace's `traceparent`: a proxied call's names its
 *   CLIENT span.
 */

/**
 * The proxy's contract with its callers (the MCP servers of server.ts and modern.ts, the
 * console's and the API's routes, `svc apply`, drills). It reads and writes the workspace's
 * upstream servers (`mcpServers`), their tools' pins (`mcpToolPins`), the agents' and the
 * workspace's upstream credentials (`mcpCredentials`, through `credentials`) and the ledger
 * (`mcp.*` records, and the gate's actions of proxied calls); it reads agents' standing and
 * mandate rules. It keeps in memory only the upstream sessions and each upstream's last listing.
 */
export interface McpProxy
  extends ServerAdmin, Pick<ToolListing, 'tools' | 'resolve' | 'inputSchema'>, FanOut, PinnedTools {
  /** The proxy's enforcement point alone, for drills: whether a proxied call would pass the standing check. */
  admitsAgent(wid: string, agentId: string): Promise<{ admitted: true } | { admitted: false; type: string }>;
  /** Adds a remote upstream server, its tools as they are now pinned (proxy/add-server.ts). */
  add(wid: string, input: McpServerInput, actor: string): Promise<McpServerAdded>;
  /** A server as the console and the API show it (never its secret). */
  view(record: McpServerRecord): McpServerView;
  /**
   * The link of an agent's requests without a caller session: its own session of each upstream
   * in the caller's era (2026-07-28: spoken in that era where the upstream can), declaring
   * `capabilities` when given (at most MAX_CAPABILITY_SETS sets per upstream; past that, the
   * era's plain session).
   */
  pooledFor(who: ProxyCaller, era?: UpstreamEra, capabilities?: ClientCapabilities): UpstreamLink;
  /**
   * A caller session's link (server.ts): its own session of each upstream, opened on first use
   * with `hooks` (the caller's capabilities; what the upstream asks or says outside a call goes
   * to the caller), ended by `end` (the caller's session ended or idled out).
   */
  sessionScope(who: ProxyCaller, hooks: () => UpstreamHooks): SessionScope;
  /** Each agent's and the workspace's own credentials for an upstream (upstream-auth.ts). */
  readonly credentials: UpstreamAuth;
  /** A proxied call, gated and screened (proxy/call.ts). */
  call: ProxyCall;
  /** A prompt's exposed name (named as tools are). */
  exposed(server: McpServerRecord, tool: string): string;
  /** Ends every upstream session, at shutdown: each holds an event stream open to its upstream. */
  close(): Promise<void>;
  /** A new upstream session of its own (the caller ends it with `end`). */
  open(server: McpServerRecord, hooks?: UpstreamHooks, era?: UpstreamEra, agentId?: string): Promise<Client>;
  /** Ends an upstream session a caller opened with `open`: DELETE, then the connection closes. */
  end(client: Client): Promise<void>;
  /** How many upstream sessions are open now. */
  readonly upstreamSessions: number;
}

/**
 * The proxy, assembled: its shared parts built once (proxy/context.ts), then each operation from
 * its own file under proxy/.
 */
export function createMcpProxy(deps: McpProxyDeps): McpProxy {
  const { store, clock, masterKey, ledger } = deps;
  const limits: UpstreamLimits = { ...UPSTREAM_DEFAULTS, ...deps.limits };
  const servers = mcpServersRepo(store);
  const pins = createPins({ store, clock, ledger });
  // The SDK's transport takes a fetch: this one (undici's `request` behind the part of fetch the
  // transport uses, upstream-fetch.ts) connects only where the dispatcher allows, and sends the
  // active trace on (the request that made it, or the proxied call's CLIENT span).
  const vettedFetch = requestFetch(deps.dispatcher);
  const secretOf = (server: McpServerRecord) =>
    server.secretSealed
      ? unsealText(masterKey, SEAL_PURPOSE, `${server.workspaceId}/${server.name}`, server.secretSealed)
      : null;
  // What an upstream is sent as Authorization, chosen for the agent whose session it is (upstream-auth.ts).
  const auth = createUpstreamAuth({
    store,
    clock,
    masterKey,
    ledger,
    vettedFetch,
    workspaceSecret: secretOf,
    serverNow: (wid, name) => servers.get(wid, name),
  });
  const connections = createUpstreamConnections({
    version: deps.version,
    limits,
    vettedFetch,
    auth,
    ...(deps.local ? { local: deps.local } : {}),
  });
  const ctx: ProxyContext = {
    deps,
    limits,
    gate: limitGate(deps.gate, deps.gateLimiter),
    servers,
    pins,
    guard: createToolGuard({ store, clock, ledger, dataLoss: deps.dataLoss }),
    auth,
    listed: createListings({ clock, pins, allowed, keyOf: serverKey, timeoutMs: limits.timeoutMs }),
    connections,
    pool: createUpstreamPool({ clock, limits, connections }),
    secretOf,
  };

  const admin = createServerAdmin(ctx);
  const listing = createToolListing(ctx, admin.list);
  const fanOut = createFanOut(ctx, admin.list);
  const pinned = createPinnedTools(ctx, admin.find);
  return {
    // The servers: added, listed, found, changed, removed.
    admitsAgent: (wid, agentId) => admitsAgent(store, wid, agentId),
    add: createAddServer(ctx),
    view: serverView,
    list: admin.list,
    listAll: admin.listAll,
    find: admin.find,
    server: admin.server,
    setEnabled: admin.setEnabled,
    secretIs: admin.secretIs,
    update: admin.update,
    remove: admin.remove,
    // The console's look at pins, and approvals of changed tools.
    pinnedTools: pinned.pinnedTools,
    approveTool: pinned.approveTool,
    // How requests reach upstreams, and the credentials they carry.
    pooledFor: ctx.pool.pooledFor,
    sessionScope: ctx.pool.sessionScope,
    credentials: auth,
    open: connections.open,
    end: connections.end,
    async close() {
      await ctx.pool.sessions.close();
      await deps.local?.close();
    },
    get upstreamSessions() {
      return ctx.pool.sessions.size;
    },
    // What agents are offered and what they call.
    tools: listing.tools,
    resolve: listing.resolve,
    inputSchema: listing.inputSchema,
    call: createCall(ctx, listing),
    first: fanOut.first,
    all: fanOut.all,
    exposed,
    promptTarget: fanOut.promptTarget,
  };
}
