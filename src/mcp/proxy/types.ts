import type { Client, ClientCapabilities, Progress } from '@modelcontextprotocol/client';
import type { Dispatcher } from 'undici';
import type { Gate } from '../../gate/service.js';
import type { RateLimiter } from '../../http/rate-limit.js';
import type { Ledger } from '../../ledger/service.js';
import type { Clock } from '../../lib/clock.js';
import type { MandateRule } from '../../mandates/records.js';
import type { DataLossMode } from '../../settings/schema.js';
import type { Store } from '../../store/index.js';
import type { UpstreamProblem } from '../diagnosis.js';
import type { LocalServers } from '../local-servers.js';
import type { McpServerRecord } from '../records.js';

/**
 * The shapes and limits the proxy's parts share (proxy.ts and proxy/): its upstream links and
 * hooks, its settings, and what it answers about a server. Values here are constants only, so
 * every part can import this file without importing another part.
 */

/** The setting that lets upstreams be on loopback and private addresses. */
export const PRIVATE_SETTING = 'mcp.allowPrivateUpstreams';
/** What a workspace secret given when a server is added is sealed for. */
export const SEAL_PURPOSE = 'mcp-upstream-secret';
/** The agent id the console's own look at an upstream (its tools' pins) goes under. */
export const CONSOLE = '(console)';
/** Pages read of one upstream's list before the rest is left out. */
export const MAX_PAGES = 20;
/** Capability sets a 2026-07-28 caller may declare that get a shared upstream client each, per upstream. */
export const MAX_CAPABILITY_SETS = 8;
/** The longest capability set (as canonical JSON) that gets a shared client. */
export const MAX_CAPABILITY_KEY = 1024;

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

/** The agent a request is made for. */
export interface ProxyCaller {
  workspaceId: string;
  agentId: string;
}

/** A proxied tool: an upstream server and the tool's name there. */
export interface ProxyTarget {
  server: McpServerRecord;
  tool: string;
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

/** A caller session's link (server.ts), and what ends it. */
export interface SessionScope {
  link: UpstreamLink;
  /** The upstream sessions it opened, for what the caller tells them all (its roots changed). */
  clients(): Array<Promise<Client>>;
  /** Ends every upstream session it opened (the caller's session ended or idled out). */
  end(): Promise<void>;
}

/** How a proxied call relays what comes back, and on which link it travels. */
export interface CallRelay {
  progress?: (p: Progress) => void;
  own?: UpstreamHooks;
  signal?: AbortSignal;
  /** The caller session's link; without one, the agent's own sessions are used. */
  link?: UpstreamLink;
  /** The caller's era (legacy unless said), and for a 2026-07-28 caller's retry what it answered. */
  era?: UpstreamEra;
  input?: { inputResponses?: Record<string, unknown>; requestState?: string };
}

/** A server as the console and the API show it: never its sealed secret; a local one has no URL. */
export type McpServerView = Omit<McpServerRecord, 'secretSealed' | 'url' | 'kind' | 'enabled'> & {
  url?: string;
  kind: 'local' | 'remote';
  enabled: boolean;
  hasSecret: boolean;
};

/** A server just added: its view, the tools pinned (null: it could not be listed) and why not. */
export type McpServerAdded = McpServerView & {
  pinnedTools: string[] | null;
  problem: UpstreamProblem | null;
};

/** What adding a remote server takes. */
export interface McpServerInput {
  name: string;
  url: string;
  secret?: string | null;
  allowTools?: string[] | null;
  unprefixed?: boolean;
}

/** What `svc apply` may change of a remote server in place. */
export interface McpServerChange {
  url?: string;
  secret?: string | null;
  allowTools?: string[] | null;
  unprefixed?: boolean;
}

/** What the proxy is built with (app.ts). */
export interface McpProxyDeps {
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
}
