import { randomUUID } from 'node:crypto';
import {
  Client,
  ProtocolError,
  StreamableHTTPClientTransport,
  type ClientCapabilities,
  type Progress,
} from '@modelcontextprotocol/client';
import ipaddr from 'ipaddr.js';
import type { Dispatcher } from 'undici';
import { AppError } from '../errors/app-error.js';
import type { Gate } from '../gate/service.js';
import { readStanding } from '../agents/standing.js';
import type { Ledger } from '../ledger/service.js';
import { isoAt, type Clock } from '../lib/clock.js';
import { addressProblem } from '../lib/safe-target.js';
import { sealText, unsealText } from '../lib/seal.js';
import type { Store } from '../store/index.js';
import type { MandateRule } from '../mandates/records.js';
import type { McpServerRecord } from './records.js';
import type { ToolResult } from './tools.js';
import { metrics } from '../lib/metrics.js';
import { inSpan, SpanKind } from '../lib/tracing.js';
import { actionOf, mayCall, mayUseServer } from './narrowing.js';
import { createListings } from './listings.js';
import { createPins, type PinView } from './pins.js';
import { mcpServersRepo } from './repo.js';
import { requestFetch } from './upstream-fetch.js';
import { createUpstreamAuth } from './upstream-auth.js';
import { DeadlineError, diagnose, errorWithoutSecret, withDeadline, type UpstreamProblem } from './diagnosis.js';
import { brokenBy, createUpstreamSessions, type UpstreamSession } from './upstream-sessions.js';
import { createToolGuard, limitGate } from './tool-guard.js';
import type { RateLimiter } from '../http/rate-limit.js';
import type { DataLossMode } from '../settings/schema.js';
import type { LocalServers } from './local-servers.js';

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
const SEAL_PURPOSE = 'mcp-upstream-secret';
/** The setting that lets upstreams be on loopback and private addresses. */
export const PRIVATE_SETTING = 'mcp.allowPrivateUpstreams';
const NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** The deadlines and caps of upstream sessions: the `mcp.upstream*` settings. */
export interface UpstreamLimits {
  /** Opening an upstream session, listing, adding a server, ending a session. */
  timeoutMs: number;
  /** One proxied call (counted again from each progress notification). */
  callTimeoutMs: number;
  sessionsPerAgent: number;
  sessionsPerServer: number;
  /** An agent's upstream session without a caller session ends after this long unused. */
  idleMs: number;
}
export const UPSTREAM_DEFAULTS: UpstreamLimits = {
  timeoutMs: 5_000,
  callTimeoutMs: 60_000,
  sessionsPerAgent: 64,
  sessionsPerServer: 1_000,
  idleMs: 5 * 60_000,
};
/** Request ids of clients attached to an upstream session: a block of ATTACHED_IDS_EACH each, from ATTACHED_IDS_FROM. */
const ATTACHED_IDS_FROM = 1_000_000;
const ATTACHED_IDS_EACH = 1_000;
/** The agent id the console's own look at an upstream (its tools' pins) goes under. */
const CONSOLE = '(console)';
/** Pages read of one upstream's list before the rest is left out. */
const MAX_PAGES = 20;
/** Capability sets a 2026-07-28 caller may declare that get a shared upstream client each, per upstream. */
export const MAX_CAPABILITY_SETS = 8;
/** The longest capability set (as canonical JSON) that gets a shared client. */
const MAX_CAPABILITY_KEY = 1024;

/** JSON with every object's keys sorted, so that equal capability sets have one text. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}

/**
 * What a connection to an upstream relays back: the capabilities the upstream is told its client
 * has (the caller's), where its requests go (the caller's answers come back), where its
 * notifications go.
 */
export interface UpstreamHooks {
  capabilities?: ClientCapabilities;
  request?: (
    req: { method: string; params?: Record<string, unknown> },
    signal: AbortSignal,
  ) => Promise<Record<string, unknown>>;
  notify?: (n: { method: string; params?: Record<string, unknown> }) => void;
}

/**
 * How a request reaches an upstream: the agent's session of it (requests without a caller
 * session), or the caller session's. `drop` ends the session of an upstream that failed on the
 * way, so that the next request opens another. `use` runs a call on that session, counted as in
 * use while it runs (it is not ended under the call), and ends only that session should it fail
 * on the way.
 */
export type UpstreamLink = ((server: McpServerRecord) => Promise<Client>) & {
  drop?: (server: McpServerRecord) => Promise<void>;
  use?: <T>(server: McpServerRecord, run: (client: Client) => Promise<T>) => Promise<T>;
};

/** The protocol era a caller speaks, and so the era of the connection its requests take upstream. */
export type UpstreamEra = 'legacy' | 'modern';

export interface UpstreamTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  [extra: string]: unknown;
}

/**
 * An upstream address the proxy may call: https, or http on the loopback interface only (a
 * secret never crosses a network in clear); no credentials in the address itself (they would be
 * stored, recorded and shown in clear; the secret field is sealed).
 */
function urlProblem(raw: string, allowPrivate: boolean): string | null {
  const url = new URL(raw);
  if (url.username || url.password) return 'put credentials in the secret field, not in the URL';
  if (url.search !== '') return 'the URL may not carry a query (credentials belong in the secret field)';
  const loopback = url.hostname === '127.0.0.1' || url.hostname === '[::1]' || url.hostname === 'localhost';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback))
    return 'the URL must be https (http only on the loopback interface)';
  // A written address is judged now; a name when it is connected to (its addresses may change).
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const literal = host === 'localhost' ? '127.0.0.1' : ipaddr.isValid(host) ? host : null;
  return literal ? addressProblem(literal, allowPrivate, PRIVATE_SETTING) : null;
}

export function createMcpProxy(deps: {
  store: Store;
  clock: Clock;
  masterKey: Buffer;
  ledger: Ledger;
  gate: Gate;
  version: string;
  /** Whether upstreams on loopback and private addresses may be added (the dispatcher enforces it at connect). */
  allowPrivateUpstreams: boolean;
  /** Every request to an upstream goes through it: lib/safe-target.ts's safeDispatcher. */
  dispatcher: Dispatcher;
  /** An agent's mandate rules, for narrowing what it is shown. */
  rules: (wid: string, agentId: string) => Promise<readonly MandateRule[]>;
  /** Deadlines and caps of the upstream sessions (the `mcp.upstream*` settings); their defaults unless given. */
  limits?: Partial<UpstreamLimits>;
  /** The gate's per-agent limiter, shared with its HTTP routes (tool-guard.ts). */
  gateLimiter: RateLimiter;
  /** The workspace's data-loss mode, which screens proxied calls (tool-guard.ts). */
  dataLoss: (wid: string) => Promise<DataLossMode>;
  /** The config file's stdio servers (local-servers.ts); none unless given. */
  local?: LocalServers;
}) {
  const { store, clock, masterKey, ledger, dispatcher } = deps;
  const gate = limitGate(deps.gate, deps.gateLimiter);
  const limits: UpstreamLimits = { ...UPSTREAM_DEFAULTS, ...deps.limits };
  const servers = mcpServersRepo(store);
  const pins = createPins({ store, clock, ledger });
  const guard = createToolGuard({ store, clock, ledger, dataLoss: deps.dataLoss });
  // The SDK's transport takes a fetch: this one (undici's `request` behind the part of fetch the
  // transport uses, upstream-fetch.ts) connects only where the dispatcher allows, and sends the
  // active trace on (the request that made it, or the proxied call's CLIENT span).
  const vettedFetch = requestFetch(dispatcher);

  const secretOf = (server: McpServerRecord) =>
    server.secretSealed
      ? unsealText(masterKey, SEAL_PURPOSE, `${server.workspaceId}/${server.name}`, server.secretSealed)
      : null;
  /** A client of the proxy's, whose upstream's requests the caller answers and whose notifications the caller hears. */
  const clientOf = (hooks: UpstreamHooks, era: UpstreamEra): Client => {
    const client = new Client(
      { name: 'svc-proxy', version: deps.version },
      {
        capabilities: hooks.capabilities ?? {},
        // A modern caller's connection: the upstream's input_required results come back to the
        // proxy as they are, for the caller to answer; nothing is fulfilled here.
        ...(era === 'modern'
          ? { versionNegotiation: { mode: 'auto' as const }, inputRequired: { autoFulfill: false } }
          : {}),
      },
    );
    if (hooks.request)
      client.fallbackRequestHandler = async (req, ctx) =>
        (await hooks.request!(
          { method: req.method, ...(req.params ? { params: req.params } : {}) },
          ctx.mcpReq.signal,
        )) as never;
    if (hooks.notify)
      client.fallbackNotificationHandler = async (n) =>
        hooks.notify!({ method: n.method, ...(n.params ? { params: n.params } : {}) });
    return client;
  };
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
  /** A transport to the upstream, authorized as `agentId` (undefined: the workspace, as the console's look). */
  const transportOf = (
    server: McpServerRecord,
    session?: { sessionId: string; protocolVersion?: string },
    agentId?: string,
  ) =>
    new StreamableHTTPClientTransport(new URL(server.url), {
      fetch: vettedFetch,
      authProvider: auth.provider(server, agentId === CONSOLE ? undefined : agentId),
      ...(session ?? {}),
    });

  /** A new upstream session: the handshake (initialize, or server/discover) within the deadline. */
  const open = async (
    server: McpServerRecord,
    hooks: UpstreamHooks = {},
    era: UpstreamEra = 'legacy',
    agentId?: string,
  ): Promise<Client> => {
    // A local server is a child process speaking 2025 over stdio.
    const local = server.kind === 'local';
    const client = clientOf(hooks, local ? 'legacy' : era);
    try {
      await client.connect(local ? localOf(server) : transportOf(server, undefined, agentId), {
        timeout: limits.timeoutMs,
      });
    } catch (err) {
      // A process that did not complete the handshake is ended, not left running.
      if (local) await client.close().catch(() => {});
      throw err;
    }
    return client;
  };
  const localOf = (server: McpServerRecord) => {
    if (!deps.local)
      throw new ProtocolError(-32003, `The local MCP server ${server.name} is not in the configuration.`);
    return deps.local.transport(server);
  };

  let attachedBlocks = 0;
  /**
   * A client of its own for one call, on the upstream session `base` opened: no handshake, no
   * request of its own (it sends the base's `Mcp-Session-Id` and protocol version, or, to a
   * 2026-07-28 upstream, the discovery the base made), so a call costs the upstream the call
   * alone, and what the upstream sends while the call runs (on the call's own stream) reaches
   * this client's hooks. Closing it ends no upstream session. An upstream that gave no session id
   * (a stateless one) is sent none: the empty id tells the SDK's client the handshake is done.
   */
  const attach = async (
    base: Client,
    server: McpServerRecord,
    hooks: UpstreamHooks,
    era: UpstreamEra,
    agentId: string,
  ) => {
    const client = clientOf(hooks, era);
    // Every client on one upstream session must number its requests apart, or the upstream would
    // route one call's answer (and cancellation) to another's: each attached client starts its
    // ids at a block of its own (the SDK's client counts from its `_requestMessageId`). A client
    // without that counter gets a session of its own instead.
    const ids = client as unknown as { _requestMessageId?: unknown };
    if (typeof ids._requestMessageId !== 'number') {
      await client.connect(transportOf(server, undefined, agentId), { timeout: limits.timeoutMs });
      return client;
    }
    attachedBlocks += 1;
    ids._requestMessageId = ATTACHED_IDS_FROM + attachedBlocks * ATTACHED_IDS_EACH;
    const version = base.getNegotiatedProtocolVersion();
    const discover = base.getDiscoverResult();
    if (discover && base.getProtocolEra() === 'modern') {
      await client.connect(transportOf(server, undefined, agentId), { prior: { kind: 'modern', discover } });
      return client;
    }
    const sessionId = (base.transport as StreamableHTTPClientTransport | undefined)?.sessionId ?? '';
    await client.connect(transportOf(server, { sessionId, ...(version ? { protocolVersion: version } : {}) }, agentId));
    return client;
  };

  /** Ends an upstream session: DELETE on Streamable HTTP (within the deadline), then the connection closes. */
  const end = async (client: Client): Promise<void> => {
    const transport = client.transport as StreamableHTTPClientTransport | undefined;
    if (transport?.sessionId) await withDeadline(transport.terminateSession(), limits.timeoutMs).catch(() => {});
    await client.close().catch(() => {});
  };

  // The upstream sessions (upstream-sessions.ts): one per agent, upstream, era and declared
  // capability set for the agent's requests without a caller session, one per caller session and
  // upstream within one; never one agent's for another. A 2026-07-28 caller's call that relays
  // nothing back but declares capabilities (the upstream may answer input_required for them)
  // takes the session declaring that same set: at most MAX_CAPABILITY_SETS sets per agent and
  // upstream (a call past that, or with a set over MAX_CAPABILITY_KEY characters, is attached to
  // the agent's plain session instead, declaring its set).
  const sessions = createUpstreamSessions({
    now: () => clock.now(),
    perAgent: limits.sessionsPerAgent,
    perServer: limits.sessionsPerServer,
    idleMs: limits.idleMs,
    sweepMs: Math.min(limits.idleMs, 10_000),
    end,
  });
  const serverKey = (server: McpServerRecord) => `${server.workspaceId}/${server.name}/${server.createdAt}`;
  const agentKey = (who: { workspaceId: string; agentId: string }) => `${who.workspaceId}/${who.agentId}`;
  /** The session of an agent's requests without a caller session, declaring `caps` (none: the era's plain one). */
  const sessionOf = (
    who: { workspaceId: string; agentId: string },
    server: McpServerRecord,
    era: UpstreamEra = 'legacy',
    capabilities?: ClientCapabilities,
  ): UpstreamSession | undefined => {
    const caps = capabilities === undefined || Object.keys(capabilities).length === 0 ? '' : canonical(capabilities);
    const plain = `|${agentKey(who)}|${era}|${serverKey(server)}`;
    const key = caps === '' ? plain : `${plain}#${caps}`;
    if (caps !== '' && !sessions.has(key)) {
      if (caps.length > MAX_CAPABILITY_KEY) return undefined;
      if (sessions.count((k) => k.startsWith(`${plain}#`)) >= MAX_CAPABILITY_SETS) return undefined;
    }
    const name = { key, scope: '', agent: agentKey(who), server: serverKey(server) };
    return sessions.take(name, () =>
      open(server, caps === '' ? {} : { capabilities: capabilities! }, era, who.agentId),
    );
  };
  /** The link of an agent's requests without a caller session, in its era (and declaring `capabilities`). */
  const pooledFor = (
    who: { workspaceId: string; agentId: string },
    era: UpstreamEra = 'legacy',
    capabilities?: ClientCapabilities,
  ): UpstreamLink => {
    const sessionFor = (server: McpServerRecord) =>
      sessionOf(who, server, era, capabilities) ?? sessionOf(who, server, era)!;
    const link: UpstreamLink = (server) => sessionFor(server).client;
    link.use = (server, run) => sessions.use(sessionFor(server), run);
    // The agent's sessions of an upstream that failed on the way end; the next request opens another.
    link.drop = (server) =>
      sessions.retireWhere((s) => s.scope === '' && s.agent === agentKey(who) && s.server === serverKey(server));
    return link;
  };

  const exposed = (server: McpServerRecord, tool: string) => (server.unprefixed ? tool : `${server.name}__${tool}`);
  /** The prefixed upstream an exposed name (of a tool or prompt) belongs to, and the name upstream. */
  const prefixedOwner = (
    servers: McpServerRecord[],
    name: string,
  ): { server: McpServerRecord; inner: string } | undefined => {
    const server = servers.find((s) => !s.unprefixed && name.startsWith(`${s.name}__`));
    return server ? { server, inner: name.slice(server.name.length + 2) } : undefined;
  };
  const allowed = (server: McpServerRecord, tool: string) =>
    server.allowTools === null || server.allowTools.includes(tool);

  const listed = createListings({ clock, pins, allowed, keyOf: serverKey, timeoutMs: limits.timeoutMs });
  const offered = listed.offered;
  /**
   * Refuses a call of a tool whose description or schema is not the approved one (or that is not
   * listed); else the calls per minute each agent may make of it (its pin's; null: no limit).
   */
  const checkPinned = async (
    target: { server: McpServerRecord; tool: string },
    link: UpstreamLink,
  ): Promise<number | null> => {
    let tools: UpstreamTool[];
    try {
      tools = await withDeadline(listed.recent(target.server, link), limits.timeoutMs);
    } catch (err) {
      await link.drop?.(target.server);
      throw upstreamError(err, target.server, limits.timeoutMs, secretOf(target.server));
    }
    const admitted = await pins.admission(
      target.server,
      exposed(target.server, target.tool),
      target.tool,
      tools.find((x) => x.name === target.tool),
    );
    if (admitted.refusal) throw admitted.refusal;
    return admitted.callsPerMinute;
  };
  /** The upstream servers whose prompts an agent is offered (narrowing.ts). */
  const promptServers = async (who: { workspaceId: string; agentId: string }, servers: McpServerRecord[]) => {
    const rules = await deps.rules(who.workspaceId, who.agentId);
    return servers.filter((s) => mayUseServer(rules, s));
  };

  const refuseIfStopped = async (who: { workspaceId: string; agentId: string }): Promise<void> => {
    const standing = await readStanding(store, who.workspaceId, who.agentId);
    if (standing.stopped) {
      throw new AppError('agent_stopped', {
        message: `Agent ${who.agentId} is stopped (${standing.reason}); the tool call was not sent.`,
        details: { hold: standing.hold, stopped: standing.stoppedBy, agentId: who.agentId },
      });
    }
  };

  return {
    /** The proxy's enforcement point alone, for drills: whether a proxied call would pass the standing check. */
    async admitsAgent(wid: string, agentId: string): Promise<{ admitted: true } | { admitted: false; type: string }> {
      try {
        await refuseIfStopped({ workspaceId: wid, agentId });
        return { admitted: true };
      } catch (err) {
        return { admitted: false, type: (err as AppError).type };
      }
    },

    async add(
      wid: string,
      input: { name: string; url: string; secret?: string | null; allowTools?: string[] | null; unprefixed?: boolean },
      actor: string,
    ): Promise<
      Omit<McpServerRecord, 'secretSealed' | 'url' | 'kind' | 'enabled'> & {
        url?: string;
        kind: 'local' | 'remote';
        enabled: boolean;
        hasSecret: boolean;
        pinnedTools: string[] | null;
        problem: UpstreamProblem | null;
      }
    > {
      if (!NAME.test(input.name))
        throw new AppError('invalid_request', {
          details: { errors: [{ field: 'name', message: 'name must be 1 to 64 letters, digits, _ or -' }] },
        });
      if (deps.local?.declares(wid, input.name))
        throw new AppError('invalid_request', {
          message: `A local MCP server named ${input.name} is in the configuration.`,
          details: { errors: [{ field: 'name', message: 'is taken by a local server of the configuration' }] },
        });
      const wrongUrl = urlProblem(input.url, deps.allowPrivateUpstreams);
      if (wrongUrl)
        throw new AppError('invalid_request', { details: { errors: [{ field: 'url', message: wrongUrl }] } });
      const record: McpServerRecord = {
        name: input.name,
        workspaceId: wid,
        url: input.url,
        secretSealed: input.secret ? sealText(masterKey, SEAL_PURPOSE, `${wid}/${input.name}`, input.secret) : null,
        allowTools: input.allowTools ?? null,
        unprefixed: input.unprefixed ?? false,
        createdAt: isoAt(clock.now()),
        createdBy: actor,
      };
      // Its tools as they are now are what the person adding it approves (pins.ts). An upstream
      // that cannot be listed within the deadline is added all the same, its tools withheld until
      // each is approved, and the answer names why (diagnosis.ts).
      // An upstream may offer 2026-07-28 callers tools it does not offer 2025 ones: both eras'
      // listings are pinned (a 2025-only upstream's refusal of the newer era is no failure).
      let tools: UpstreamTool[] | null = null;
      let problem: UpstreamProblem | null = null;
      if (!(await servers.has(wid, input.name))) {
        const listed = async (era: UpstreamEra): Promise<UpstreamTool[]> => {
          let client: Client | undefined;
          try {
            client = await open(record, {}, era);
            const all = (await client.listTools(undefined, { timeout: limits.timeoutMs })).tools as UpstreamTool[];
            return all.filter((tool) => allowed(record, tool.name));
          } finally {
            if (client) await end(client);
          }
        };
        tools = await withDeadline(listed('legacy'), limits.timeoutMs).catch((err: unknown) => {
          problem = diagnose(err, limits.timeoutMs, input.secret);
          return null;
        });
        if (tools) {
          const legacy = tools;
          const modern = await withDeadline(listed('modern'), limits.timeoutMs).catch(() => [] as UpstreamTool[]);
          tools = [...legacy, ...modern.filter((tool) => !legacy.some((x) => x.name === tool.name))];
        }
      }
      await store.write(async () => {
        if (await servers.has(wid, input.name))
          throw new AppError('invalid_request', {
            message: `An upstream MCP server named ${input.name} exists.`,
            details: { errors: [{ field: 'name', message: 'is taken' }] },
          });
        await servers.put(record);
        const pinned = await pins.pinInWrite(record, tools ?? [], actor);
        await ledger.record({
          workspaceId: wid,
          actor,
          kind: 'mcp.server_added',
          subject: input.name,
          data: {
            url: input.url,
            allowTools: record.allowTools,
            unprefixed: record.unprefixed,
            secret: record.secretSealed !== null,
            pinned: tools === null ? null : pinned,
            ...(problem ? { problem: (problem as UpstreamProblem).cause } : {}),
          },
        });
      });
      return { ...this.view(record), pinnedTools: tools === null ? null : tools.map((x) => x.name), problem };
    },

    view({ secretSealed, url, kind, enabled, ...rest }: McpServerRecord) {
      return {
        ...rest,
        ...(kind === 'local' ? { kind } : { url, kind: 'remote' as const }),
        enabled: enabled !== false,
        hasSecret: secretSealed !== null,
      };
    },

    /** The servers agents are offered: the remote ones and the enabled local ones of the configuration. */
    async list(wid: string): Promise<McpServerRecord[]> {
      return (await this.listAll(wid)).filter((s) => s.enabled !== false);
    },

    /**
     * Every server of a workspace, for the console: the remote ones, and the configuration's
     * local ones (each recorded the first time the workspace's servers are listed, enabled,
     * its tools waiting for approval; a remote server added earlier under the same name keeps
     * it, and the local one stays out of that workspace). A local server no longer in the
     * configuration is left out (its record and pins stay, for when it comes back).
     */
    async listAll(wid: string): Promise<McpServerRecord[]> {
      const stored = await servers.list(wid);
      const missing = (deps.local?.of(wid) ?? []).filter((l) => !stored.some((s) => s.name === l.id));
      if (missing.length > 0) {
        await store.write(async () => {
          for (const l of missing) {
            if (await servers.has(wid, l.id)) continue;
            const record: McpServerRecord = {
              name: l.id,
              workspaceId: wid,
              url: '',
              secretSealed: null,
              allowTools: null,
              unprefixed: false,
              createdAt: isoAt(clock.now()),
              createdBy: 'system',
              kind: 'local',
            };
            await servers.put(record);
            await ledger.record({
              workspaceId: wid,
              actor: 'system',
              kind: 'mcp.server_added',
              subject: l.id,
              data: { local: true, allowTools: null, unprefixed: false, secret: false, pinned: null },
            });
          }
        });
        return this.listAll(wid);
      }
      return stored.filter((s) => s.kind !== 'local' || deps.local?.declares(wid, s.name));
    },

    /** One server of the workspace (a local one only while the configuration declares it), or not_found. */
    async find(wid: string, name: string): Promise<McpServerRecord> {
      const server = (await this.listAll(wid)).find((s) => s.name === name);
      if (!server) throw new AppError('not_found', { message: `No upstream MCP server ${name} in this workspace.` });
      return server;
    },

    /** Enables or disables a server (a disabled one is offered to no agent, its sessions ended). */
    async setEnabled(wid: string, name: string, enabled: boolean, actor: string) {
      const existing = await this.find(wid, name);
      if (!enabled) {
        await sessions.retireWhere((s) => s.server === serverKey(existing));
        listed.forget(existing);
      }
      const next: McpServerRecord = { ...existing, enabled };
      await store.write(async () => {
        // Removed (or added again) meanwhile: not this one to change.
        if ((await servers.get(wid, name))?.createdAt !== existing.createdAt)
          throw new AppError('not_found', { message: `No upstream MCP server ${name} in this workspace.` });
        await servers.put(next);
        await ledger.record({
          workspaceId: wid,
          actor,
          kind: enabled ? 'mcp.server_enabled' : 'mcp.server_disabled',
          subject: name,
          data: {},
        });
      });
      return this.view(next);
    },

    /** Whether a remote server's secret is `value` (null: it has none), without answering the secret. */
    secretIs(server: McpServerRecord, value: string | null): boolean {
      return secretOf(server) === value;
    },

    /**
     * A remote server's address, secret, tool allowlist or prefixing changed in place (`svc apply`):
     * its sessions end and its listing is forgotten, so the next call connects anew; its tools'
     * approvals stay, and a tool whose definition differs at the new address is held as any changed
     * tool is (pins.ts). A ledger record (never the secret).
     */
    async update(
      wid: string,
      name: string,
      change: { url?: string; secret?: string | null; allowTools?: string[] | null; unprefixed?: boolean },
      actor: string,
    ) {
      const existing = await this.find(wid, name);
      if (existing.kind === 'local')
        throw new AppError('invalid_request', {
          message: `The MCP server ${name} is a local server of the configuration (mcp.localServers): it is changed there.`,
          details: { errors: [{ field: 'name', message: 'is a local server of the configuration' }] },
        });
      const url = change.url ?? existing.url;
      const wrongUrl = urlProblem(url, deps.allowPrivateUpstreams);
      if (wrongUrl)
        throw new AppError('invalid_request', { details: { errors: [{ field: 'url', message: wrongUrl }] } });
      const next: McpServerRecord = {
        ...existing,
        url,
        ...(change.secret !== undefined
          ? { secretSealed: change.secret ? sealText(masterKey, SEAL_PURPOSE, `${wid}/${name}`, change.secret) : null }
          : {}),
        ...(change.allowTools !== undefined ? { allowTools: change.allowTools } : {}),
        ...(change.unprefixed !== undefined ? { unprefixed: change.unprefixed } : {}),
      };
      await sessions.retireWhere((x) => x.server === serverKey(existing));
      listed.forget(existing);
      await store.write(async () => {
        if ((await servers.get(wid, name))?.createdAt !== existing.createdAt)
          throw new AppError('not_found', { message: `No upstream MCP server ${name} in this workspace.` });
        await servers.put(next);
        await ledger.record({
          workspaceId: wid,
          actor,
          kind: 'mcp.server_updated',
          subject: name,
          data: {
            changed: Object.keys(change).sort(),
            url: next.url,
            allowTools: next.allowTools,
            unprefixed: next.unprefixed,
            secret: next.secretSealed !== null,
          },
        });
      });
      return this.view(next);
    },

    async remove(wid: string, name: string, actor: string): Promise<void> {
      const existing = await servers.get(wid, name);
      if (existing?.kind === 'local' && deps.local?.declares(wid, name))
        throw new AppError('invalid_request', {
          message: `The MCP server ${name} is a local server of the configuration (mcp.localServers): it is removed there, not here. Disable it instead.`,
          details: { errors: [{ field: 'name', message: 'is a local server of the configuration' }] },
        });
      if (existing) {
        await sessions.retireWhere((s) => s.server === serverKey(existing));
        listed.forget(existing);
      }
      await store.write(async () => {
        if (!(await servers.has(wid, name)))
          throw new AppError('not_found', { message: `No upstream MCP server ${name} in this workspace.` });
        await servers.remove(wid, name);
        await pins.removeInWrite(wid, name);
        await auth.removeAllInWrite(wid, name);
        await ledger.record({ workspaceId: wid, actor, kind: 'mcp.server_removed', subject: name, data: {} });
      });
    },

    /**
     * The link of an agent's requests without a caller session: its own session of each upstream
     * in the caller's era (2026-07-28: spoken in that era where the upstream can), declaring
     * `capabilities` when given (at most MAX_CAPABILITY_SETS sets per upstream; past that, the
     * era's plain session).
     */
    pooledFor,

    /**
     * A caller session's link (server.ts): its own session of each upstream, opened on first use
     * with `hooks` (the caller's capabilities; what the upstream asks or says outside a call goes
     * to the caller), ended by `end` (the caller's session ended or idled out).
     */
    sessionScope(who: { workspaceId: string; agentId: string }, hooks: () => UpstreamHooks) {
      const scope = `s${randomUUID()}`;
      const sessionFor = (server: McpServerRecord) =>
        sessions.take(
          { key: `${scope}|${serverKey(server)}`, scope, agent: agentKey(who), server: serverKey(server) },
          () => open(server, hooks(), 'legacy', who.agentId),
        );
      const link: UpstreamLink = (server) => sessionFor(server).client;
      link.use = (server, run) => sessions.use(sessionFor(server), run);
      link.drop = (server) => sessions.retireWhere((s) => s.scope === scope && s.server === serverKey(server));
      return {
        link,
        /** The upstream sessions it opened, for what the caller tells them all (its roots changed). */
        clients: () => sessions.clients(scope),
        end: () => sessions.retireWhere((s) => s.scope === scope),
      };
    },

    /** Each agent's and the workspace's own credentials for an upstream (upstream-auth.ts). */
    credentials: auth,
    /** An upstream server as stored, or not_found. */
    async server(wid: string, name: string): Promise<McpServerRecord> {
      const found = await servers.get(wid, name);
      if (!found) throw new AppError('not_found', { message: `No upstream MCP server ${name} in this workspace.` });
      return found;
    },

    /** Ends every upstream session, at shutdown: each holds an event stream open to its upstream. */
    async close(): Promise<void> {
      await sessions.close();
      await deps.local?.close();
    },
    /** A new upstream session of its own (the caller ends it). */
    open,
    /** Ends an upstream session a caller opened with `open`: DELETE, then the connection closes. */
    end,
    /** How many upstream sessions are open now. */
    get upstreamSessions(): number {
      return sessions.size;
    },

    /**
     * Every upstream's allowed tools that the agent's mandate could allow and that match their
     * pins, under their exposed names, asked of all upstreams at once; an upstream that does not
     * answer within the deadline (`mcp.upstreamTimeoutMs`) is left out, its listing left to go on
     * in the background (it refreshes the listing the calls' checks use when it lands); one that
     * fails has its session ended, and the next listing opens another.
     */
    async tools(who: { workspaceId: string; agentId: string }, link: UpstreamLink): Promise<UpstreamTool[]> {
      const [rules, all] = await Promise.all([deps.rules(who.workspaceId, who.agentId), this.list(who.workspaceId)]);
      const now = clock.now();
      const lists = await Promise.all(
        all.map(async (server) => {
          try {
            const { tools, served } = await withDeadline(offered(server, link), limits.timeoutMs);
            return tools
              .filter((tool) => served.has(tool.name) && mayCall(rules, server, tool.name, now))
              .map((tool) => ({ ...tool, name: exposed(server, tool.name) }) as UpstreamTool);
          } catch (err) {
            if (!(err instanceof DeadlineError)) await link.drop?.(server);
            return [];
          }
        }),
      );
      return lists.flat();
    },

    /** The upstream server and tool behind an exposed name, or undefined. */
    async resolve(
      wid: string,
      name: string,
      link: UpstreamLink,
    ): Promise<{ server: McpServerRecord; tool: string } | undefined> {
      const all = await this.list(wid);
      const prefixed = prefixedOwner(all, name);
      if (prefixed)
        return allowed(prefixed.server, prefixed.inner) ? { server: prefixed.server, tool: prefixed.inner } : undefined;
      // An unprefixed name belongs to whichever unprefixed server lists it: each is asked once, together.
      const owners = await Promise.all(
        all
          .filter((s) => s.unprefixed && allowed(s, name))
          .map(async (s) => {
            try {
              return (await withDeadline(offered(s, link), limits.timeoutMs)).tools.some((x) => x.name === name)
                ? s
                : undefined;
            } catch (err) {
              if (!(err instanceof DeadlineError)) await link.drop?.(s);
              return undefined;
            }
          }),
      );
      const server = owners.find((s) => s !== undefined);
      return server ? { server, tool: name } : undefined;
    },

    /**
     * A proxied tool's input schema (`target`, resolved), from the upstream's recent listing
     * (listed again through `link` only when older than PIN_RECHECK_MS, as for the call's pin
     * check), or undefined.
     */
    async inputSchema(target: { server: McpServerRecord; tool: string }, link: UpstreamLink): Promise<unknown> {
      return (await listed.recent(target.server, link)).find((x) => x.name === target.tool)?.inputSchema;
    },

    /**
     * A proxied call: refused when the agent is stopped (thrown, for a JSON-RPC error), gated as
     * an action, then forwarded on the caller session's upstream session (`link`), or else on
     * the agent's. With `own` hooks that relay (requests, notifications) or a progress relay the
     * call gets a client of its own attached to that session (no handshake), through which the
     * upstream's notifications and requests during the call reach the caller; with only
     * `own.capabilities` it takes the agent's session declaring that set. The call has its
     * deadline (`mcp.upstreamCallTimeoutMs`, counted again from each progress): past it, or when
     * the caller cancels, the upstream is sent `notifications/cancelled`.
     */
    async call(
      who: { workspaceId: string; agentId: string },
      target: { server: McpServerRecord; tool: string },
      args: Record<string, unknown> | undefined,
      relay: {
        progress?: (p: Progress) => void;
        own?: UpstreamHooks;
        signal?: AbortSignal;
        /** The caller session's link; without one, the agent's own sessions are used. */
        link?: UpstreamLink;
        /** The caller's era (legacy unless said), and for a 2026-07-28 caller's retry what it answered. */
        era?: UpstreamEra;
        input?: { inputResponses?: Record<string, unknown>; requestState?: string };
      } = {},
    ): Promise<ToolResult> {
      try {
        await refuseIfStopped(who);
      } catch (err) {
        metrics.mcpCalls.inc({ outcome: 'stopped' });
        throw err;
      }
      let limit: number | null;
      try {
        limit = await checkPinned(target, relay.link ?? pooledFor(who, relay.era ?? 'legacy'));
      } catch (err) {
        metrics.mcpCalls.inc({ outcome: err instanceof AppError ? 'withheld' : 'upstream_error' });
        throw err;
      }
      // The tool's own limit, and the arguments screened (tool-guard.ts).
      const { sent, mode } = await guard.before(who, target, args, limit);
      const { type, domain } = actionOf(target.server, target.tool);
      const { action } = await gate.authorize(who, {
        type,
        summary: `MCP tool ${target.tool} on ${target.server.name}`,
        target: { domain },
      });
      if (action.decision !== 'allow') {
        metrics.mcpCalls.inc({ outcome: action.decision === 'review' ? 'review' : 'denied' });
        const text =
          action.decision === 'review'
            ? `Waiting for a person: approval ${action.approvalId} (action ${action.id}). Call get_action with that id; once allowed, call the tool again.`
            : `Denied by the gate: ${action.reason} (${action.signals.join(', ')}). Ask for the mandate to allow ${type}.`;
        return {
          isError: true,
          content: [{ type: 'text', text }],
          structuredContent: { action: action as unknown as Record<string, unknown> },
        };
      }
      const era = relay.era ?? 'legacy';
      // A call that relays something back (progress, the upstream's requests or notifications)
      // gets a client of its own on the session; one that only declares the caller's
      // capabilities takes the agent's session declaring that set (past MAX_CAPABILITY_SETS, a
      // client of its own declaring it); one that declares nothing takes the era's plain one.
      const relays =
        relay.progress !== undefined || relay.own?.request !== undefined || relay.own?.notify !== undefined;
      const caps = relay.own?.capabilities;
      const shared = relays || relay.link ? undefined : sessionOf(who, target.server, era, caps);
      const send = async (client: Client) =>
        (await client.callTool(
          {
            name: target.tool,
            arguments: sent,
            ...(relay.input?.inputResponses ? { inputResponses: relay.input.inputResponses } : {}),
            ...(relay.input?.requestState !== undefined ? { requestState: relay.input.requestState } : {}),
          } as never,
          {
            timeout: limits.callTimeoutMs,
            ...(relay.progress ? { onprogress: relay.progress, resetTimeoutOnProgress: true } : {}),
            ...(relay.signal ? { signal: relay.signal } : {}),
            ...(era === 'modern' ? { allowInputRequired: true } : {}),
          },
        )) as ToolResult;
      let client: Client | undefined;
      let failed = false;
      // The forwarded call is a CLIENT span (the gate's decision above has its own spans); its
      // result is screened before the caller sees it (tool-guard.ts).
      const result = await inSpan(
        `tools/call ${target.tool}`,
        {
          kind: SpanKind.CLIENT,
          attributes: {
            'mcp.method.name': 'tools/call',
            'gen_ai.tool.name': target.tool,
            'svc.mcp.server': target.server.name,
          },
        },
        async () => {
          // An attached call keeps the agent's session it is on from idling out while it runs.
          // A local server's process has one connection: the call goes on the session itself.
          const attached = async (b: Client) =>
            target.server.kind === 'local'
              ? send(b)
              : send((client = await attach(b, target.server, relay.own ?? {}, era, who.agentId)));
          try {
            const result = shared
              ? await sessions.use(shared, send)
              : relay.link?.use
                ? await relay.link.use(target.server, attached)
                : relay.link
                  ? await attached(await relay.link(target.server))
                  : await sessions.use(sessionOf(who, target.server, era)!, attached);
            metrics.mcpCalls.inc({ outcome: result.isError === true ? 'tool_error' : 'ok' });
            return result;
          } catch (err) {
            failed = true;
            metrics.mcpCalls.inc({ outcome: 'upstream_error' });
            // The link's upstream session failed on the way (not the upstream's own answer, nor a
            // deadline): the next request opens another. A link's `use` has ended that one session
            // already, once its other calls are answered; the agent's others are left alone.
            if (relay.link && !relay.link.use && brokenBy(err)) await relay.link.drop?.(target.server);
            // The upstream's own error is screened as its result would be, without the credential
            // the call carried (the agent's own, or the workspace's) nor the server's secret.
            if (err instanceof ProtocolError) {
              const used = await auth.credential(target.server, who.agentId);
              const clean = errorWithoutSecret(errorWithoutSecret(err, used), secretOf(target.server));
              throw await guard.afterError(who, target, clean, mode);
            }
            throw upstreamError(err, target.server, limits.callTimeoutMs, secretOf(target.server));
          } finally {
            // A call that failed may still be sending the upstream its notifications/cancelled
            // (past the deadline, or cancelled by the caller): its client closes once that is out.
            if (client && failed) setTimeout(() => void client!.close().catch(() => {}), limits.timeoutMs).unref();
            else await client?.close().catch(() => {});
          }
        },
      );
      return guard.after(who, target, result, mode);
    },

    /**
     * A request for the upstreams' resources, prompts or completions, for a running agent: `ask`
     * is put to each upstream that declares `capability`, in the order they were added, and the
     * first answer wins. With none declaring it: -32601, as for any method a server lacks.
     */
    async first<T>(
      who: { workspaceId: string; agentId: string },
      capability: 'resources' | 'prompts' | 'completions',
      link: UpstreamLink,
      ask: (client: Client, server: McpServerRecord) => Promise<T | undefined>,
      missing?: () => ProtocolError,
    ): Promise<T> {
      await refuseIfStopped(who);
      let failure: unknown;
      let failedOn: McpServerRecord | undefined;
      const all = await this.list(who.workspaceId);
      for (const server of capability === 'prompts' ? await promptServers(who, all) : all) {
        let client: Client;
        try {
          client = await withDeadline(link(server), limits.timeoutMs);
        } catch (err) {
          failedOn ??= server;
          failure ??= err;
          continue;
        }
        if (!client.getServerCapabilities()?.[capability]) continue;
        try {
          const answer = await ask(client, server);
          if (answer !== undefined) return answer;
        } catch (err) {
          failedOn ??= server;
          failure ??= err;
        }
      }
      if (failure !== undefined)
        throw upstreamError(failure, undefined, limits.timeoutMs, failedOn && secretOf(failedOn));
      if (missing) throw missing();
      throw new ProtocolError(-32601, `No upstream MCP server here offers ${capability}.`);
    },

    /** Every upstream's answer to a list request (all its pages), merged; upstreams that fail are left out. */
    async all<T>(
      who: { workspaceId: string; agentId: string },
      capability: 'resources' | 'prompts',
      link: UpstreamLink,
      list: (client: Client, server: McpServerRecord, cursor?: string) => Promise<{ items: T[]; nextCursor?: string }>,
    ): Promise<T[]> {
      await refuseIfStopped(who);
      const all = await this.list(who.workspaceId);
      // Each upstream within the deadline: a late one leaves out only its own items.
      const pages = async (server: McpServerRecord): Promise<T[]> => {
        const client = await link(server);
        if (!client.getServerCapabilities()?.[capability]) return [];
        const items: T[] = [];
        let cursor: string | undefined;
        for (let page = 0; page < MAX_PAGES; page += 1) {
          const answer = await list(client, server, cursor);
          items.push(...answer.items);
          if (!answer.nextCursor) break;
          cursor = answer.nextCursor;
        }
        return items;
      };
      const lists = await Promise.all(
        (capability === 'prompts' ? await promptServers(who, all) : all).map((server) =>
          withDeadline(pages(server), limits.timeoutMs).catch(() => [] as T[]),
        ),
      );
      return lists.flat();
    },

    /**
     * One server's pinned tools, for an owner or admin: its tools are listed again first (when
     * the upstream answers), so that a change shows even before an agent met it.
     */
    async pinnedTools(
      wid: string,
      name: string,
    ): Promise<{ reachable: boolean; problem: UpstreamProblem | null; tools: PinView[] }> {
      const server = await this.find(wid, name);
      // The console's own session of the upstream, as an agent's: never an agent's.
      const link = pooledFor({ workspaceId: wid, agentId: CONSOLE });
      let problem: UpstreamProblem | null = null;
      try {
        await withDeadline(offered(server, link), limits.timeoutMs);
      } catch (err) {
        problem = diagnose(err, limits.timeoutMs, secretOf(server));
        if (!(err instanceof DeadlineError)) await link.drop?.(server);
      }
      return { reachable: problem === null, problem, tools: await pins.list(wid, name) };
    },

    /** Approves what a tool says now (its change, named by `hash`), serving it again. */
    async approveTool(
      wid: string,
      name: string,
      tool: string,
      hash: string,
      actor: string,
      callsPerMinute?: number | null,
    ) {
      const server = await this.find(wid, name);
      return pins.approve(server, tool, hash, actor, callsPerMinute);
    },

    /** A prompt's exposed name, and the upstream prompt behind one (named as tools are). */
    exposed,
    async promptTarget(wid: string, name: string): Promise<{ server: McpServerRecord; prompt: string } | undefined> {
      const prefixed = prefixedOwner(await this.list(wid), name);
      return prefixed ? { server: prefixed.server, prompt: prefixed.inner } : undefined;
    },
  };
}

/**
 * An upstream's failure as the caller sees it: its own JSON-RPC errors pass through as it sent
 * them; a transport failure names its cause (diagnosis.ts: an HTTP status, a deadline, a TLS,
 * name or connection failure, an answer that is not MCP) in `error.data.cause`, without the
 * upstream's body or error text, which may hold what an internal service answered.
 */
function upstreamError(
  err: unknown,
  server: McpServerRecord | undefined,
  timeoutMs: number,
  secret?: string | null,
): ProtocolError {
  // The upstream's own error, without the server's secret (an upstream may echo what it was sent).
  if (err instanceof ProtocolError) return errorWithoutSecret(err, secret);
  const name = `The ${server?.kind === 'local' ? 'local' : 'upstream'} MCP server${server ? ` ${server.name}` : ''}`;
  const { cause, status, message } = diagnose(err, timeoutMs, secret);
  if (server?.kind === 'local' && cause !== 'timeout')
    return new ProtocolError(
      -32003,
      `${name} failed: its process ended or could not start (see svc's log); the next call starts another.`,
      { type: 'upstream_failure', cause: 'process_exit' },
    );
  const data = { type: 'upstream_failure', cause, ...(status !== undefined ? { status } : {}) };
  if (cause === 'refused_address') return new ProtocolError(-32003, `${name} was not contacted: ${message}.`, data);
  const said = cause === 'connection' ? 'could not be reached' : cause === 'not_mcp' ? 'is not an MCP server' : message;
  return new ProtocolError(-32003, `${name} failed: ${said}.`, data);
}

export type McpProxy = ReturnType<typeof createMcpProxy>;
