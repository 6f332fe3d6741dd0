/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts; ids: src/lib/ids.ts). Types only: the store imports
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

/**
 * Who an upstream credential belongs to (mcp/upstream-auth.ts): one agent's, or the whole
 * workspace's (`WORKSPACE_HOLDER`), each of one kind: a static bearer secret or an OAuth connection.
 */
export type McpCredentialKind = 'secret' | 'oauth';

/** One holder's credential for one upstream MCP server, its secrets sealed with the master key. */
export interface McpCredentialRecord {
  workspaceId: string;
  server: string;
  /** The server record's createdAt: a server removed and added again starts with no credentials. */
  serverCreatedAt: string;
  /** An agent id, or '*workspace' for the workspace's own. */
  holder: string;
  kind: McpCredentialKind;
  /** kind 'secret': the bearer secret, sealed. */
  secretSealed?: string;
  /** kind 'oauth': the tokens and what refreshing them needs. */
  oauth?: {
    accessSealed: string;
    refreshSealed: string | null;
    /** When the access token expires (ISO); null: the authorization server did not say. */
    expiresAt: string | null;
    scope: string | null;
    /** The authorization server's metadata, as discovered (endpoints only matter; nothing secret). */
    issuer: string;
    metadata: Record<string, unknown>;
    clientId: string;
    clientSecretSealed: string | null;
    /** The resource indicator the tokens were asked for (the upstream's, from its metadata). */
    resource: string | null;
  };
  setBy: string;
  setAt: string;
  /** When the tokens were last renewed (ISO), if ever. */
  refreshedAt?: string;
}

/** An OAuth connection under way: what the callback needs, keyed by the state's hash, for a few minutes. */
export interface McpOAuthPendingRecord {
  workspaceId: string;
  server: string;
  serverCreatedAt: string;
  holder: string;
  /** The person who started it: only they may finish it. */
  userId: string;
  actor: string;
  verifierSealed: string;
  redirectUri: string;
  issuer: string;
  metadata: Record<string, unknown>;
  clientId: string;
  clientSecretSealed: string | null;
  resource: string | null;
  expiresAt: string;
}
