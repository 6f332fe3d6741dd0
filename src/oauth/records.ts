/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts; ids: src/lib/ids.ts). Types only: the store imports
 * them, so nothing here runs (test/architecture/layers.test.ts holds it to that).
 */

/** An OAuth client, registered dynamically (RFC 7591). */
export interface OAuthClientRecord {
  clientId: string;
  clientName: string;
  redirectUris: string[];
  authMethod: 'none' | 'client_secret_post' | 'client_secret_basic';
  /** SHA-256 of the client secret (confidential clients only). */
  secretHash: string | null;
  createdAt: string;
}

/** A person's MCP client connected to exactly one agent: its tokens act as that agent at /mcp. */
export interface OAuthConnectionRecord {
  id: string;
  workspaceId: string;
  clientId: string;
  clientName: string;
  agentId: string;
  userId: string;
  /** The granted scope (oauth/scopes.ts); absent on connections made before scopes: `svc:agent offline_access`. */
  scope?: string;
  createdAt: string;
  endedAt: string | null;
  endedWhy: string | null;
}

/** An authorization code, stored by its hash: single use, a few minutes. */
export interface OAuthCodeRecord {
  clientId: string;
  redirectUri: string;
  challenge: string;
  connectionId: string;
  workspaceId: string;
  expiresAt: string;
  usedAt: string | null;
}

/** An access (aat_) or refresh (art_) token, stored by its hash. */
export interface OAuthTokenRecord {
  kind: 'access' | 'refresh';
  connectionId: string;
  workspaceId: string;
  agentId: string;
  clientId: string;
  expiresAt: string | null;
  usedAt: string | null;
  /** A refresh token's access token (hash), which stops working when the refresh token is used. */
  pairedAccess: string | null;
  /** A used refresh token: the pair its use issued, sealed (oauth/grace.ts), served again until `until`. */
  grace?: { until: string; sealed: string } | null;
}

/**
 * A device authorization under way (RFC 8628; oauth/device/service.ts), stored by the hash of its device
 * code. A person approves or denies it in the console by its user code.
 */
export interface DeviceCodeRecord {
  /** The user code, normalised: eight letters without the dash. */
  userCode: string;
  clientId: string;
  requestedAt: string;
  /** The address the request came from, shown to the person who approves it. */
  requestedFrom: string;
  expiresAt: string;
  /** The polling interval now in force (raised by 5 at each `slow_down`). */
  intervalSeconds: number;
  lastPolledAt: string | null;
  status: 'pending' | 'approved' | 'denied' | 'used';
  /** Who approved it, and for which workspace (null until approved). */
  userId: string | null;
  workspaceId: string | null;
  decidedAt: string | null;
}

/** A person signed in to the command line: its tokens rotate; ending it stops every one of them. */
export interface PersonLoginRecord {
  id: string;
  workspaceId: string;
  userId: string;
  clientId: string;
  createdAt: string;
  requestedFrom: string;
  endedAt: string | null;
  endedWhy: string | null;
}

/** A person's command-line access (`pat_`) or refresh (`prt_`) token, stored by its hash. */
export interface PersonTokenRecord {
  kind: 'access' | 'refresh';
  loginId: string;
  workspaceId: string;
  userId: string;
  clientId: string;
  expiresAt: string;
  usedAt: string | null;
  /** A refresh token's access token (hash), which stops working when the refresh token is used. */
  pairedAccess: string | null;
  /** A used refresh token: the pair its use issued, sealed (oauth/grace.ts), served again until `until`. */
  grace?: { until: string; sealed: string } | null;
}
