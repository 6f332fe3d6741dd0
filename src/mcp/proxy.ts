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
import { readStanding } from '../killswitch/standing.js';
import type { Ledger } from '../ledger/service.js';
import { isoAt, type Clock } from '../lib/clock.js';
import { addressProblem, refusedBy } from '../lib/safe-target.js';
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
import { createToolGuard, limitGate } from './tool-guard.js';
import type { RateLimiter } from '../http/rate-limit.js';
import type { DataLossMode } from '../settings/schema.js';

/**
 * The MCP proxy (issue 7): a workspace's upstream MCP servers, their tools offered at /mcp as
 * `<server>__<tool>` (or unprefixed, when the server is set so).
 * Rules:
 * - Owners and admins add and remove upstream servers in the console: a name, a URL, an optional
 *   static bearer secret (sealed with the master key, never shown again) and a tool allow-list.
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
const LIST_TIMEOUT_MS = 5_000;
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

/** How a request reaches an upstream: the shared client, or one a session opened. */
export type UpstreamLink = (server: McpServerRecord) => Promise<Client>;

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
  /** The gate's per-agent limiter, shared with its HTTP routes (tool-guard.ts). */
  gateLimiter: RateLimiter;
  /** The workspace's data-loss mode, which screens proxied calls (tool-guard.ts). */
  dataLoss: (wid: string) => Promise<DataLossMode>;
}) {
  const { store, clock, masterKey, ledger, dispatcher } = deps;
  const gate = limitGate(deps.gate, deps.gateLimiter);
  const servers = mcpServersRepo(store);
  const pins = createPins({ store, clock, ledger });
  const guard = createToolGuard({ store, clock, ledger, pins, dataLoss: deps.dataLoss });
  // The SDK's transport takes a fetch: this one (undici's `request` behind the part of fetch the
  // transport uses, upstream-fetch.ts) connects only where the dispatcher allows, and sends the
  // active trace on (the request that made it, or the proxied call's CLIENT span).
  const vettedFetch = requestFetch(dispatcher);

  const open = async (
    server: McpServerRecord,
    hooks: UpstreamHooks = {},
    era: UpstreamEra = 'legacy',
  ): Promise<Client> => {
    const secret = server.secretSealed
      ? unsealText(masterKey, SEAL_PURPOSE, `${server.workspaceId}/${server.name}`, server.secretSealed)
      : null;
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
    // Whatever the upstream asks of its client, the caller answers; whatever it tells, the caller hears.
    if (hooks.request)
      client.fallbackRequestHandler = async (req, ctx) =>
        (await hooks.request!(
          { method: req.method, ...(req.params ? { params: req.params } : {}) },
          ctx.mcpReq.signal,
        )) as never;
    if (hooks.notify)
      client.fallbackNotificationHandler = async (n) =>
        hooks.notify!({ method: n.method, ...(n.params ? { params: n.params } : {}) });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(server.url), {
        fetch: vettedFetch,
        ...(secret ? { requestInit: { headers: { authorization: `Bearer ${secret}` } } } : {}),
      }),
    );
    return client;
  };

  // One connected client per upstream server, shared by calls that need no relay (the upstream
  // transport takes concurrent requests): a call then costs the upstream one request, not an
  // initialize handshake as well. A client that fails is dropped from the pool, and made again
  // next time; it is closed only once no call is using it, since closing it fails every call in
  // flight on it, though the upstream may have run them (an agent told a call failed may send it
  // again). `live` holds every client not yet closed, the dropped ones included, for shutdown.
  // A 2026-07-28 caller's call that relays nothing back but declares capabilities (the upstream
  // may answer input_required for them) shares a client declaring that same set: pooled by the
  // set's canonical text, at most MAX_CAPABILITY_SETS sets per upstream (a call past that, or
  // with a set over MAX_CAPABILITY_KEY characters, opens a client of its own, as before).
  interface Shared {
    client: Promise<Client>;
    busy: number;
    dropped: boolean;
  }
  const pool = new Map<string, Shared>();
  const live = new Set<Shared>();
  const serverKey = (server: McpServerRecord) => `${server.workspaceId}/${server.name}/${server.createdAt}`;
  const poolKey = (server: McpServerRecord, era: UpstreamEra = 'legacy') => `${era}/${serverKey(server)}`;
  /** The pool key of a client declaring `caps` (none: the era's plain shared client). */
  const capsKey = (server: McpServerRecord, era: UpstreamEra, caps: string) =>
    caps === '' ? poolKey(server, era) : `${poolKey(server, era)}#${caps}`;
  const closeIfDone = async (shared: Shared): Promise<void> => {
    if (!shared.dropped || shared.busy > 0 || !live.delete(shared)) return;
    await shared.client.then((c) => c.close()).catch(() => {});
  };
  const retire = async (shared: Shared): Promise<void> => {
    for (const [key, s] of pool) if (s === shared) pool.delete(key);
    shared.dropped = true;
    await closeIfDone(shared);
  };
  const sharedOf = (
    server: McpServerRecord,
    era: UpstreamEra = 'legacy',
    capabilities?: ClientCapabilities,
  ): Shared | undefined => {
    const caps = capabilities === undefined ? '' : canonical(capabilities);
    const key = capsKey(server, era, caps);
    let shared = pool.get(key);
    if (!shared) {
      if (caps !== '') {
        if (caps.length > MAX_CAPABILITY_KEY) return undefined;
        const prefix = `${poolKey(server, era)}#`;
        let sets = 0;
        for (const k of pool.keys()) if (k.startsWith(prefix)) sets += 1;
        if (sets >= MAX_CAPABILITY_SETS) return undefined;
      }
      const made: Shared = {
        client: open(server, caps === '' ? {} : { capabilities: capabilities! }, era),
        busy: 0,
        dropped: false,
      };
      pool.set(key, made);
      live.add(made);
      made.client.catch(() => void retire(made));
      shared = made;
    }
    return shared;
  };
  const pooled = (server: McpServerRecord): Promise<Client> => sharedOf(server)!.client;
  const pooledModern = (server: McpServerRecord): Promise<Client> => sharedOf(server, 'modern')!.client;
  const drop = async (server: McpServerRecord): Promise<void> => {
    const mine = [...pool].filter(([key]) =>
      (['legacy', 'modern'] as const).some(
        (era) => key === poolKey(server, era) || key.startsWith(`${poolKey(server, era)}#`),
      ),
    );
    for (const [, shared] of mine) await retire(shared);
  };
  /** Runs `use` on a shared client, which is not closed while it runs; a transport failure drops that client. */
  const withShared = async <T>(shared: Shared, use: (client: Client) => Promise<T>): Promise<T> => {
    shared.busy += 1;
    try {
      return await use(await shared.client);
    } catch (err) {
      if (!(err instanceof ProtocolError)) shared.dropped = true;
      throw err;
    } finally {
      shared.busy -= 1;
      if (shared.dropped) await retire(shared);
    }
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

  const listed = createListings({ clock, pins, allowed, keyOf: poolKey, timeoutMs: LIST_TIMEOUT_MS });
  const offered = listed.offered;
  /** Refuses a call of a tool whose description or schema is not the approved one (or that is not listed). */
  const checkPinned = async (target: { server: McpServerRecord; tool: string }): Promise<void> => {
    let tools: UpstreamTool[];
    try {
      tools = await listed.recent(target.server, pooled);
    } catch (err) {
      await drop(target.server);
      throw upstreamError(err, target.server);
    }
    const refusal = await pins.refusal(
      target.server,
      exposed(target.server, target.tool),
      target.tool,
      tools.find((x) => x.name === target.tool),
    );
    if (refusal) throw refusal;
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
    ): Promise<Omit<McpServerRecord, 'secretSealed'> & { hasSecret: boolean; pinnedTools: string[] | null }> {
      if (!NAME.test(input.name))
        throw new AppError('invalid_request', {
          details: { errors: [{ field: 'name', message: 'name must be 1 to 64 letters, digits, _ or -' }] },
        });
      const problem = urlProblem(input.url, deps.allowPrivateUpstreams);
      if (problem) throw new AppError('invalid_request', { details: { errors: [{ field: 'url', message: problem }] } });
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
      // that cannot be listed is added all the same, its tools withheld until each is approved.
      // An upstream may offer 2026-07-28 callers tools it does not offer 2025 ones: both eras'
      // listings are pinned (a 2025-only upstream's refusal of the newer era is no failure).
      let tools: UpstreamTool[] | null = null;
      if (!(await servers.has(wid, input.name))) {
        const listed = async (era: UpstreamEra): Promise<UpstreamTool[]> => {
          let client: Client | undefined;
          try {
            client = await open(record, {}, era);
            const all = (await client.listTools(undefined, { timeout: LIST_TIMEOUT_MS })).tools as UpstreamTool[];
            return all.filter((tool) => allowed(record, tool.name));
          } finally {
            await client?.close().catch(() => {});
          }
        };
        tools = await listed('legacy').catch(() => null);
        if (tools) {
          const legacy = tools;
          const modern = await listed('modern').catch(() => [] as UpstreamTool[]);
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
          },
        });
      });
      return { ...this.view(record), pinnedTools: tools === null ? null : tools.map((x) => x.name) };
    },

    view({ secretSealed, ...rest }: McpServerRecord) {
      return { ...rest, hasSecret: secretSealed !== null };
    },

    async list(wid: string): Promise<McpServerRecord[]> {
      return servers.list(wid);
    },

    async remove(wid: string, name: string, actor: string): Promise<void> {
      const existing = await servers.get(wid, name);
      if (existing) {
        await drop(existing);
        listed.forget(existing);
      }
      await store.write(async () => {
        if (!(await servers.has(wid, name)))
          throw new AppError('not_found', { message: `No upstream MCP server ${name} in this workspace.` });
        await servers.remove(wid, name);
        await pins.removeInWrite(wid, name);
        await ledger.record({ workspaceId: wid, actor, kind: 'mcp.server_removed', subject: name, data: {} });
      });
    },

    /** The shared client of each upstream: the link for requests that need nothing relayed. */
    pooled: pooled as UpstreamLink,
    /** The same for callers of protocol 2026-07-28: the upstream is spoken to in that era where it can. */
    pooledModern: pooledModern as UpstreamLink,

    /**
     * Closes every shared client, at shutdown: each holds an event stream open to its upstream,
     * which would otherwise keep the process alive after the server stopped.
     */
    async close(): Promise<void> {
      const all = [...live];
      pool.clear();
      live.clear();
      await Promise.all(all.map((s) => s.client.then((c) => c.close()).catch(() => {})));
    },
    /** A client of its own for one session or one call; the caller closes it. */
    open,

    /**
     * Every upstream's allowed tools that the agent's mandate could allow and that match their
     * pins, under their exposed names, asked of all upstreams at once; an upstream that does not
     * answer within LIST_TIMEOUT_MS is left out (and reconnected next time).
     */
    async tools(who: { workspaceId: string; agentId: string }, link: UpstreamLink = pooled): Promise<UpstreamTool[]> {
      const [rules, all] = await Promise.all([deps.rules(who.workspaceId, who.agentId), this.list(who.workspaceId)]);
      const now = clock.now();
      const lists = await Promise.all(
        all.map(async (server) => {
          try {
            const { tools, served } = await offered(server, link);
            return tools
              .filter((tool) => served.has(tool.name) && mayCall(rules, server, tool.name, now))
              .map((tool) => ({ ...tool, name: exposed(server, tool.name) }) as UpstreamTool);
          } catch {
            if (link === pooled || link === pooledModern) await drop(server);
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
      link: UpstreamLink = pooled,
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
              return (await offered(s, link)).tools.some((x) => x.name === name) ? s : undefined;
            } catch {
              if (link === pooled || link === pooledModern) await drop(s);
              return undefined;
            }
          }),
      );
      const server = owners.find((s) => s !== undefined);
      return server ? { server, tool: name } : undefined;
    },

    /**
     * A proxied tool's input schema, from the upstream's recent listing (listed again through
     * `link` only when older than PIN_RECHECK_MS, as for the call's pin check), or undefined.
     */
    async inputSchema(wid: string, name: string, link: UpstreamLink = pooled): Promise<unknown> {
      const target = await this.resolve(wid, name, link);
      if (!target) return undefined;
      return (await listed.recent(target.server, link)).find((x) => x.name === target.tool)?.inputSchema;
    },

    /**
     * A proxied call: refused when the agent is stopped (thrown, for a JSON-RPC error), gated as
     * an action, then forwarded. With `own` hooks that relay (requests, notifications) or a
     * progress relay the call gets a client of its own, through which the upstream's
     * notifications and requests reach the caller; with only `own.capabilities` it shares the
     * client declaring that set (at most MAX_CAPABILITY_SETS per upstream, else its own).
     */
    async call(
      who: { workspaceId: string; agentId: string },
      target: { server: McpServerRecord; tool: string },
      args: Record<string, unknown> | undefined,
      relay: {
        progress?: (p: Progress) => void;
        own?: UpstreamHooks;
        signal?: AbortSignal;
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
      try {
        await checkPinned(target);
      } catch (err) {
        metrics.mcpCalls.inc({ outcome: err instanceof AppError ? 'withheld' : 'upstream_error' });
        throw err;
      }
      // The tool's own limit, and the arguments screened (tool-guard.ts).
      const sent = await guard.before(who, target, args);
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
      // gets a client of its own; one that only declares the caller's capabilities shares the
      // client declaring that set; one that declares nothing shares the era's plain client.
      const relays =
        relay.progress !== undefined || relay.own?.request !== undefined || relay.own?.notify !== undefined;
      const caps = relay.own?.capabilities;
      const shared = relays
        ? undefined
        : sharedOf(target.server, era, caps !== undefined && Object.keys(caps).length > 0 ? caps : undefined);
      const send = async (client: Client) =>
        (await client.callTool(
          {
            name: target.tool,
            arguments: sent,
            ...(relay.input?.inputResponses ? { inputResponses: relay.input.inputResponses } : {}),
            ...(relay.input?.requestState !== undefined ? { requestState: relay.input.requestState } : {}),
          } as never,
          {
            ...(relay.progress ? { onprogress: relay.progress, resetTimeoutOnProgress: true } : {}),
            ...(relay.signal ? { signal: relay.signal } : {}),
            ...(era === 'modern' ? { allowInputRequired: true } : {}),
          },
        )) as ToolResult;
      let client: Client | undefined;
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
          try {
            const result = shared
              ? await withShared(shared, send)
              : await send((client = await open(target.server, relay.own, era)));
            metrics.mcpCalls.inc({ outcome: result.isError === true ? 'tool_error' : 'ok' });
            return result;
          } catch (err) {
            metrics.mcpCalls.inc({ outcome: 'upstream_error' });
            throw upstreamError(err, target.server);
          } finally {
            await client?.close().catch(() => {});
          }
        },
      );
      return guard.after(who, target, result);
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
      const all = await this.list(who.workspaceId);
      for (const server of capability === 'prompts' ? await promptServers(who, all) : all) {
        let client: Client;
        try {
          client = await link(server);
        } catch (err) {
          failure ??= err;
          continue;
        }
        if (!client.getServerCapabilities()?.[capability]) continue;
        try {
          const answer = await ask(client, server);
          if (answer !== undefined) return answer;
        } catch (err) {
          failure ??= err;
        }
      }
      if (failure !== undefined) throw upstreamError(failure);
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
      const lists = await Promise.all(
        (capability === 'prompts' ? await promptServers(who, all) : all).map(async (server) => {
          try {
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
          } catch {
            return [];
          }
        }),
      );
      return lists.flat();
    },

    /**
     * One server's pinned tools, for an owner or admin: its tools are listed again first (when
     * the upstream answers), so that a change shows even before an agent met it.
     */
    async pinnedTools(wid: string, name: string): Promise<{ reachable: boolean; tools: PinView[] }> {
      const server = await servers.get(wid, name);
      if (!server) throw new AppError('not_found', { message: `No upstream MCP server ${name} in this workspace.` });
      let reachable = true;
      try {
        await offered(server, pooled);
      } catch {
        reachable = false;
        await drop(server);
      }
      return { reachable, tools: await pins.list(wid, name) };
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
      const server = await servers.get(wid, name);
      if (!server) throw new AppError('not_found', { message: `No upstream MCP server ${name} in this workspace.` });
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
 * them; a transport failure is named without its text, which may hold what an internal service
 * answered.
 */
function upstreamError(err: unknown, server?: McpServerRecord): ProtocolError {
  if (err instanceof ProtocolError) return err;
  const refused = refusedBy(err);
  if (refused)
    return new ProtocolError(
      -32003,
      `The upstream MCP server${server ? ` ${server.name}` : ''} was not contacted: ${refused.message.replace(/^refused: /, '')}.`,
      { type: 'upstream_failure' },
    );
  return new ProtocolError(
    -32003,
    `The upstream MCP server${server ? ` ${server.name}` : ''} could not be reached or did not answer.`,
    { type: 'upstream_failure' },
  );
}

export type McpProxy = ReturnType<typeof createMcpProxy>;
