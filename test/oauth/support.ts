import * as oauth from 'oauth4webapi';
import { ownerSession } from '../helpers/http.js';
import type { Served } from '../helpers/process.js';

/**
 * A person connecting an MCP client, driven with oauth4webapi against the real server: discovery,
 * registration, the authorize request, the consent page (as the signed-in owner), and the token
 * exchange. The consent page is read and posted as a browser would (cookie, Origin, form fields).
 */
export const insecure = { [oauth.allowInsecureRequests]: true } as const;

export interface Connected {
  as: oauth.AuthorizationServer;
  client: oauth.Client;
  auth: oauth.ClientAuth;
  redirectUri: string;
  tokens: oauth.TokenEndpointResponse;
}

export async function discover(server: Served): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(server.url);
  return oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
  );
}

export async function register(
  as: oauth.AuthorizationServer,
  metadata: Record<string, unknown>,
): Promise<oauth.Client> {
  return oauth.processDynamicClientRegistrationResponse(
    await oauth.dynamicClientRegistrationRequest(as, metadata as Partial<oauth.Client>, insecure),
  );
}

export async function authorizeUrl(
  as: oauth.AuthorizationServer,
  server: Served,
  client: oauth.Client,
  redirectUri: string,
  extra: Record<string, string> = {},
) {
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint!);
  const params = {
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: redirectUri,
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    resource: `${server.url}/mcp`,
    ...extra,
  };
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return { url, verifier, state };
}

/** The consent page as the signed-in person sees it, and their choice posted back; returns the Location the browser follows. */
export async function consent(
  server: Served,
  url: URL,
  cookie: string,
  decision: 'allow' | 'deny' = 'allow',
  agentId?: string,
): Promise<{ location: string; page: string }> {
  const page = await fetch(url, { headers: { cookie }, redirect: 'manual' });
  const html = await page.text();
  if (page.status !== 200) throw new Error(`consent page: ${page.status} ${html.slice(0, 300)}`);
  const request = /name="request" value="([^"]+)"/.exec(html)?.[1];
  const agent = agentId ?? /name="agent" value="([^"]+)"/.exec(html)?.[1];
  if (!request) throw new Error('no consent form');
  const body = new URLSearchParams({
    request: request.replaceAll('&amp;', '&'),
    decision,
    ...(agent ? { agent } : {}),
  });
  const posted = await fetch(`${server.url}/oauth/authorize`, {
    method: 'POST',
    body,
    headers: { cookie, origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
    redirect: 'manual',
  });
  const location = posted.headers.get('location');
  if (posted.status !== 302 || !location) throw new Error(`consent post: ${posted.status} ${await posted.text()}`);
  return { location, page: html };
}

export async function connect(
  server: Served,
  cookie?: string,
  metadata: Record<string, unknown> = {},
): Promise<Connected> {
  const as = await discover(server);
  const redirectUri = 'http://127.0.0.1:53682/callback';
  const client = await register(as, { client_name: 'Test MCP client', redirect_uris: [redirectUri], ...metadata });
  const secret = client.client_secret as string | undefined;
  const auth = !secret
    ? oauth.None()
    : client.token_endpoint_auth_method === 'client_secret_basic'
      ? oauth.ClientSecretBasic(secret)
      : oauth.ClientSecretPost(secret);
  const { url, verifier, state } = await authorizeUrl(as, server, client, redirectUri);
  const { location } = await consent(server, url, cookie ?? (await ownerSession(server)));
  const params = oauth.validateAuthResponse(as, client, new URL(location), state);
  const response = await oauth.authorizationCodeGrantRequest(as, client, auth, params, redirectUri, verifier, insecure);
  const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
  return { as, client, auth, redirectUri, tokens };
}
