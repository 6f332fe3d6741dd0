import type { Gate } from '../../gate/service.js';
import type { Listings } from '../listings.js';
import type { Pins } from '../pins.js';
import type { McpServerRecord } from '../records.js';
import type { McpServersRepo } from '../repo.js';
import type { ToolGuard } from '../tool-guard.js';
import type { UpstreamAuth } from '../upstream-auth.js';
import type { UpstreamConnections } from './connections.js';
import type { UpstreamPool } from './pool.js';
import type { McpProxyDeps, UpstreamLimits } from './types.js';

/**
 * What the proxy's operations (proxy/*.ts) share, built once by createMcpProxy (proxy.ts): its
 * deps, its limits, the parts that keep state (pins, listings, connections, sessions) and the
 * gate behind the agent's per-minute limit.
 */
export interface ProxyContext {
  readonly deps: McpProxyDeps;
  readonly limits: UpstreamLimits;
  /** The gate, each authorization taking the agent's gate limit first (tool-guard.ts limitGate). */
  readonly gate: Gate;
  readonly servers: McpServersRepo;
  readonly pins: Pins;
  readonly guard: ToolGuard;
  readonly auth: UpstreamAuth;
  readonly listed: Listings;
  readonly connections: UpstreamConnections;
  readonly pool: UpstreamPool;
  /** A server's workspace secret (given when it was added), unsealed; null: none. */
  secretOf(server: McpServerRecord): string | null;
}
