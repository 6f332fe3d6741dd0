/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts; ids are the prefixed ids of API.md). Types only: the store imports
 * them, so nothing here runs (test/architecture/layers.test.ts holds it to that).
 */

/** An upstream MCP server of a workspace, behind the proxy at /mcp (issue 7). */
export interface McpServerRecord {
  name: string;
  workspaceId: string;
  url: string;
  /** The bearer secret sent upstream, sealed with the master key (null: none). */
  secretSealed: string | null;
  /** Tools passed through; null: all. */
  allowTools: string[] | null;
  /** Tools keep their upstream names instead of <server>__<tool>. */
  unprefixed: boolean;
  createdAt: string;
  createdBy: string;
  /** 'local': a stdio server of the config file (mcp.localServers), its url empty; absent: remote. */
  kind?: 'local';
  /** false: disabled in the console, offered to no agent; absent: enabled. */
  enabled?: boolean;
}

/**
 * What an upstream tool tells an agent: its description, input and output schemas and
 * annotations, and their hash (mcp/pins.ts). A state recorded before output schemas and
 * annotations were pinned has neither field: its hash covers the description and input schema
 * alone.
 */
export interface McpToolState {
  hash: string;
  description: string | null;
  inputSchema: Record<string, unknown>;
  /** null: the tool declares none. */
  outputSchema?: Record<string, unknown> | null;
  /** null: the tool declares none. */
  annotations?: Record<string, unknown> | null;
}

/**
 * An upstream tool's pin (issue 20): the state an owner or admin approved, and what the upstream
 * offers now when that differs (the tool is withheld until someone approves it).
 */
export interface McpToolPinRecord {
  workspaceId: string;
  server: string;
  tool: string;
  /** null: never approved (the tool appeared after the server was added). */
  approved: (McpToolState & { at: string; by: string }) | null;
  /** The upstream's current state when it is not the approved one; null when they agree. */
  changed: (McpToolState & { seenAt: string }) | null;
  /** Calls per minute each agent may make of this tool (mcp/tool-guard.ts); absent or null: no limit of its own. */
  callsPerMinute?: number | null;
}
