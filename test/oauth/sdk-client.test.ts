import test from 'ava';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { createAgent, payment, type AgentFixture } from '../helpers/gate.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { manualClock } from '../helpers/clock.js';

/**
 * The official MCP SDK client with its own OAuth provider connects from nothing (issue 7): 401,
 * protected-resource and authorization-server discovery, registration, authorize, consent (the
 * person, played by a fetch with the owner's session), token, tools/call; then a refresh; and
 * after a forced refresh-token reuse, invalid_grant and a fresh authorization.
 */
let server: ServedInProcess;
let agent: AgentFixture;
const REDIRECT = 'http://127.0.0.1:33418/callback';
const clock = manualClock();

/** An in-memory provider; "visiting" the authorization URL is the person consenting in their browser. */
class TestProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  stored: OAuthTokens | undefined;
  verifier = '';
  pendingCode: string | null = null;
  authorizations = 0;
  private readonly cookie: string;
  constructor(cookie: string) {
    this.cookie = cookie;
  }
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'SDK test client',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.stored;
  }
  saveTokens(tokens: OAuthTokens) {
    this.stored = tokens;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  /** What the SDK calls on invalid_grant (tokens) or invalid_client (all), before it starts again. */
  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier') {
    if (scope === 'all' || scope === 'tokens') this.stored = undefined;
    if (scope === 'all' || scope === 'client') this.info = undefined;
  }
  codeVerifier() {
    return this.verifier;
  }
  async redirectToAuthorization(url: URL): Promise<void> {
    this.authorizations += 1;
    const page = await fetch(url, { headers: { cookie: this.cookie }, redirect: 'manual' });
    const html = await page.text();
    if (page.status !== 200) throw new Error(`consent page ${page.status}: ${html}`);
    const request = /name="request" value="([^"]+)"/.exec(html)![1]!;
    const chosen = /name="agent" value="([^"]+)"/.exec(html)![1]!;
    const posted = await fetch(`${server.url}/oauth/authorize`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: this.cookie, origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ request, agent: chosen, decision: 'allow' }),
    });
    const back = new URL(posted.headers.get('location')!);
    if (back.searchParams.get('iss') !== server.url) throw new Error('no iss in the answer');
    this.pendingCode = back.searchParams.get('code');
  }
}

async function connectWith(provider: TestProvider): Promise<Client> {
  const make = () => new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { authProvider: provider });
  const client = new Client({ name: 'sdk-oauth', version: '1.0.0' });
  try {
    await client.connect(make());
    return client;
  } catch (err) {
    if (!(err instanceof UnauthorizedError) || !provider.pendingCode) throw err;
  }
  const transport = make();
  await transport.finishAuth(provider.pendingCode);
  provider.pendingCode = null;
  const authed = new Client({ name: 'sdk-oauth', version: '1.0.0' });
  await authed.connect(transport);
  return authed;
}

test.before(async () => {
  server = await serveInProcess({ clock });
  agent = await createAgent(server);
});

test.after.always(() => stopAndClean(server));

test.serial(
  'from nothing to tools/call, then a refresh, then re-authorization after a refresh token is reused',
  async (t) => {
    const provider = new TestProvider(agent.cookie);
    const client = await connectWith(provider);
    t.is(provider.authorizations, 1);
    t.regex(String(provider.info?.client_id), /^mcp_/);
    t.regex(String(provider.stored?.access_token), /^aat_/);
    const res = await client.callTool({ name: 'authorize_action', arguments: payment(100) });
    t.like((res as { structuredContent: object }).structuredContent, { decision: 'allow', agentId: agent.agentId });
    await client.close();

    // The access token is lost (expired, say): the SDK refreshes with its refresh token.
    const firstRefresh = provider.stored!.refresh_token!;
    provider.stored = { ...provider.stored!, access_token: 'aat_expired' };
    const refreshed = await connectWith(provider);
    t.is(provider.authorizations, 1, 'a refresh, not a new authorization');
    t.not(provider.stored!.refresh_token, firstRefresh, 'the refresh token rotated');
    t.true((await refreshed.listTools()).tools.length >= 3);
    await refreshed.close();

    // A copied (used) refresh token presented again past the grace window: invalid_grant ends the
    // connection; the SDK authorizes afresh.
    clock.advance(10_001);
    provider.stored = { ...provider.stored!, access_token: 'aat_expired', refresh_token: firstRefresh };
    const again = await connectWith(provider);
    t.is(provider.authorizations, 2, 'after invalid_grant the client went through consent again');
    t.true((await again.listTools()).tools.length >= 3);
    await again.close();
  },
);
