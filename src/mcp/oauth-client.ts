import {
  discoverOAuthServerInfo,
  exchangeAuthorization,
  extractWWWAuthenticateParams,
  refreshAuthorization,
  registerClient,
  startAuthorization,
  type AuthorizationServerMetadata,
  type OAuthClientInformationMixed,
  type OAuthTokens,
} from '@modelcontextprotocol/client';

/**
 * svc as the OAuth client of an upstream MCP server (mcp/upstream-auth.ts), with the official
 * SDK's client helpers, every request sent through the vetted fetch the proxy uses (so an
 * authorization server is reached under the same address rules as the upstream itself).
 * Rules:
 * - Discovery: the upstream is asked once without a credential; a 401 whose `WWW-Authenticate`
 *   names `resource_metadata` is followed there, else `/.well-known/oauth-protected-resource`
 *   (RFC 9728); its first authorization server's metadata (RFC 8414, or OpenID discovery) is read,
 *   its issuer checked against the address it came from. The scope asked is the challenge's, else
 *   the upstream's `scopes_supported`, with `offline_access` when the authorization server offers it.
 * - Registration: dynamic client registration (RFC 7591), a public client (`none`) with svc's
 *   callback as its one redirect URI, asked anew for each connection.
 * - Authorization: PKCE (S256), a state, and the upstream's `resource` indicator; the code is
 *   exchanged at the callback, and tokens are refreshed with the refresh token.
 */
const OFFLINE = 'offline_access';

export interface Discovered {
  issuer: string;
  metadata: AuthorizationServerMetadata;
  resource: string | null;
  scope: string | undefined;
}

/** The fetch the SDK's helpers are given (formFetch). */
export type FormFetch = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** The fetch the SDK's helpers are given: a form body (URLSearchParams) sent as its text, the rest as the vetted fetch takes it. */
export function formFetch(vetted: typeof fetch): FormFetch {
  return (url: string | URL, init?: RequestInit): Promise<Response> => {
    if (init?.body instanceof URLSearchParams) {
      const headers = new Headers(init.headers);
      if (!headers.has('content-type')) headers.set('content-type', 'application/x-www-form-urlencoded');
      return vetted(url, { ...init, headers, body: init.body.toString() });
    }
    return vetted(url, init);
  };
}

export async function discover(upstreamUrl: string, fetchFn: FormFetch): Promise<Discovered> {
  // The upstream's own challenge first: it may name its metadata's address.
  let resourceMetadataUrl: URL | undefined;
  let scope: string | undefined;
  const probe = await fetchFn(upstreamUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'svc-proxy', version: '0' } },
    }),
  });
  if (probe.status === 401) ({ resourceMetadataUrl, scope } = extractWWWAuthenticateParams(probe));
  await probe.arrayBuffer().catch(() => undefined);
  const info = await discoverOAuthServerInfo(upstreamUrl, {
    fetchFn,
    ...(resourceMetadataUrl ? { resourceMetadataUrl } : {}),
  });
  if (!info.authorizationServerMetadata) throw new Error('the upstream names no authorization server metadata');
  // A refresh token is asked for where the authorization server offers one (offline_access), so
  // that the connection outlives its first access token.
  let asked = scope ?? info.resourceMetadata?.scopes_supported?.join(' ');
  if (
    asked !== undefined &&
    info.authorizationServerMetadata.scopes_supported?.includes(OFFLINE) &&
    !asked.split(' ').includes(OFFLINE)
  )
    asked = `${asked} ${OFFLINE}`;
  return {
    issuer: info.authorizationServerMetadata.issuer,
    metadata: info.authorizationServerMetadata,
    resource: info.resourceMetadata?.resource ?? null,
    scope: asked,
  };
}

export async function register(
  d: Discovered,
  redirectUri: string,
  fetchFn: FormFetch,
): Promise<{ clientId: string; clientSecret: string | null }> {
  const registered = await registerClient(d.issuer, {
    metadata: d.metadata,
    clientMetadata: {
      client_name: 'svc MCP gateway',
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    },
    ...(d.scope ? { scope: d.scope } : {}),
    fetchFn,
  });
  return { clientId: registered.client_id, clientSecret: registered.client_secret ?? null };
}

const clientInfo = (clientId: string, clientSecret: string | null): OAuthClientInformationMixed => ({
  client_id: clientId,
  ...(clientSecret ? { client_secret: clientSecret } : {}),
});

export async function authorizationUrl(
  d: Discovered,
  client: { clientId: string; clientSecret: string | null },
  redirectUri: string,
  state: string,
): Promise<{ url: string; verifier: string }> {
  const { authorizationUrl, codeVerifier } = await startAuthorization(d.issuer, {
    metadata: d.metadata,
    clientInformation: clientInfo(client.clientId, client.clientSecret),
    redirectUrl: redirectUri,
    state,
    ...(d.scope ? { scope: d.scope } : {}),
    ...(d.resource ? { resource: d.resource } : {}),
  });
  return { url: authorizationUrl.href, verifier: codeVerifier };
}

export async function exchange(
  at: { issuer: string; metadata: Record<string, unknown>; resource: string | null },
  client: { clientId: string; clientSecret: string | null },
  code: { code: string; iss?: string; verifier: string; redirectUri: string },
  fetchFn: FormFetch,
): Promise<OAuthTokens> {
  return exchangeAuthorization(at.issuer, {
    metadata: at.metadata as AuthorizationServerMetadata,
    clientInformation: clientInfo(client.clientId, client.clientSecret),
    authorizationCode: code.code,
    ...(code.iss !== undefined ? { iss: code.iss } : {}),
    codeVerifier: code.verifier,
    redirectUri: code.redirectUri,
    ...(at.resource ? { resource: at.resource } : {}),
    fetchFn,
  });
}

export async function refresh(
  at: { issuer: string; metadata: Record<string, unknown>; resource: string | null },
  client: { clientId: string; clientSecret: string | null },
  refreshToken: string,
  fetchFn: FormFetch,
): Promise<OAuthTokens> {
  return refreshAuthorization(at.issuer, {
    metadata: at.metadata as AuthorizationServerMetadata,
    clientInformation: clientInfo(client.clientId, client.clientSecret),
    refreshToken,
    ...(at.resource ? { resource: at.resource } : {}),
    fetchFn,
  });
}
