import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { withDeadline } from '../diagnosis.js';
import type { LocalServers } from '../local-servers.js';
import type { McpServerRecord } from '../records.js';
import type { UpstreamAuth } from '../upstream-auth.js';
import { CONSOLE, type UpstreamEra, type UpstreamHooks, type UpstreamLimits } from './types.js';

/**
 * Connections to upstreams with the official SDK's client (`@modelcontextprotocol/client`):
 * - A client of the proxy's declares the caller's capabilities, sends the upstream's requests to
 *   the caller and its notifications too (UpstreamHooks). A 2026-07-28 connection asks the
 *   upstream with `server/discover` and leaves its input_required results for the caller to
 *   answer; nothing is fulfilled here.
 * - Every transport takes the vetted fetch and the credential upstream-auth.ts chooses for the
 *   agent (the workspace's for the console's look); a local server's is its child process.
 * - A call's own client is attached to a session already open: no handshake, its request ids in
 *   a block of their own.
 */

/** Request ids of clients attached to an upstream session: a block of ATTACHED_IDS_EACH each, from ATTACHED_IDS_FROM. */
const ATTACHED_IDS_FROM = 1_000_000;
const ATTACHED_IDS_EACH = 1_000;

export interface UpstreamConnections {
  /**
   * A new upstream session: the handshake (initialize, or server/discover) within the deadline,
   * authorized as `agentId` (undefined: the workspace). A local server speaks 2025 over stdio,
   * whatever the era asked; its process is ended when the handshake fails.
   */
  open(server: McpServerRecord, hooks?: UpstreamHooks, era?: UpstreamEra, agentId?: string): Promise<Client>;
  /**
   * A client of its own for one call, on the upstream session `base` opened: no handshake, no
   * request of its own (it sends the base's `Mcp-Session-Id` and protocol version, or, to a
   * 2026-07-28 upstream, the discovery the base made), so a call costs the upstream the call
   * alone, and what the upstream sends while the call runs (on the call's own stream) reaches
   * this client's hooks. Closing it ends no upstream session. An upstream that gave no session id
   * (a stateless one) is sent none: the empty id tells the SDK's client the handshake is done.
   */
  attach(
    base: Client,
    server: McpServerRecord,
    hooks: UpstreamHooks,
    era: UpstreamEra,
    agentId: string,
  ): Promise<Client>;
  /** Ends an upstream session: DELETE on Streamable HTTP (within the deadline), then the connection closes. */
  end(client: Client): Promise<void>;
}

export function createUpstreamConnections(deps: {
  version: string;
  limits: UpstreamLimits;
  /** The fetch every upstream request takes (upstream-fetch.ts on the vetted dispatcher). */
  vettedFetch: typeof fetch;
  auth: UpstreamAuth;
  local?: LocalServers;
}): UpstreamConnections {
  const { limits } = deps;
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
  /** A transport to the upstream, authorized as `agentId` (undefined: the workspace, as the console's look). */
  const transportOf = (
    server: McpServerRecord,
    session?: { sessionId: string; protocolVersion?: string },
    agentId?: string,
  ) =>
    new StreamableHTTPClientTransport(new URL(server.url), {
      fetch: deps.vettedFetch,
      authProvider: deps.auth.provider(server, agentId === CONSOLE ? undefined : agentId),
      ...(session ?? {}),
    });
  const localOf = (server: McpServerRecord) => {
    if (!deps.local)
      throw new ProtocolError(-32003, `The local MCP server ${server.name} is not in the configuration.`);
    return deps.local.transport(server);
  };

  let attachedBlocks = 0;
  return {
    async open(server, hooks = {}, era = 'legacy', agentId) {
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
    },

    async attach(base, server, hooks, era, agentId) {
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
      await client.connect(
        transportOf(server, { sessionId, ...(version ? { protocolVersion: version } : {}) }, agentId),
      );
      return client;
    },

    async end(client) {
      const transport = client.transport as StreamableHTTPClientTransport | undefined;
      if (transport?.sessionId) await withDeadline(transport.terminateSession(), limits.timeoutMs).catch(() => {});
      await client.close().catch(() => {});
    },
  };
}
