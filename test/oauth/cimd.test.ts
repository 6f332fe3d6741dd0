import test from 'ava';
import * as oauth from 'oauth4webapi';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { createAgent, type AgentFixture } from '../helpers/gate.js';
import { call, mcpStatus } from '../helpers/http.js';
import { ledgerRecords } from '../helpers/console.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { manualClock } from '../helpers/clock.js';
import { documentFor, documentServer, LOOPBACK_CA, type DocumentServer } from './document-server.js';
import { authorizeUrl, consent, discover, insecure } from './support.js';

/**
 * Client ID Metadata Documents (issue 20 item 2): a client whose client_id is the https URL of
 * its own metadata document connects without registering. The document is served over https on
 * 127.0.0.1 (the test certificate), reached through the vetted dispatcher with
 * oauth.allowPrivateClientMetadata on, as a closed network would; the client is oauth4webapi.
 */
let server: ServedInProcess;
let agent: AgentFixture;
let docs: DocumentServer;
const clock = manualClock();
const REDIRECT = 'http://127.0.0.1:53999/callback';

test.before(async () => {
  docs = await documentServer();
  server = await serveInProcess({
    env: {
      SVC_OAUTH_ALLOW_PRIVATE_CLIENT_METADATA: '1',
      SVC_OAUTH_CLIENT_METADATA_TIMEOUT_MS: '1000', // the slow document's wait; ample for a loopback fetch on a busy machine
      SVC_SIGNIN_RATE_PER_MINUTE: '1000',
    },
    clock,
    clientMetadataCa: LOOPBACK_CA,
  });
  agent = await createAgent(server);
});

test.after.always(async () => {
  await stopAndClean(server);
  await docs.close();
});

/** What the store holds about clients and connections: a refused document adds nothing. */
const stored = async () => ({
  clients: (await server.app.store.tables.oauthClients.scan([])).length,
  connections: (await server.app.store.tables.oauthConnections.scan([agent.wid])).length,
  codes: (await server.app.store.tables.oauthCodes.scan([])).length,
});

/** The authorization request of a URL client, as the signed-in owner opens it. */
async function openAuthorize(clientId: string, redirectUri = REDIRECT, cookie: string | null = agent.cookie) {
  const as = await discover(server);
  const { url } = await authorizeUrl(as, server, { client_id: clientId }, redirectUri);
  const res = await fetch(url, { headers: cookie ? { cookie } : {}, redirect: 'manual' });
  return { status: res.status, location: res.headers.get('location'), html: await res.text() };
}

test.serial('metadata says URL client ids are supported', async (t) => {
  const as = await discover(server);
  t.is(as.client_id_metadata_document_supported, true);
});

test.serial(
  'a URL client connects with oauth4webapi: consent shows the host, tokens work at /mcp and refresh, nothing is registered',
  async (t) => {
    const path = '/apps/browser-agent.json';
    docs.serve(path, (url) => ({ headers: { 'cache-control': 'max-age=60' }, body: documentFor(url, [REDIRECT]) }));
    const clientId = docs.url(path);
    const before = await stored();
    const as = await discover(server);
    const client: oauth.Client = { client_id: clientId, token_endpoint_auth_method: 'none' };
    const { url, verifier, state } = await authorizeUrl(as, server, client, REDIRECT);
    const { location, page } = await consent(server, url, agent.cookie);
    const host = new URL(clientId).host;
    t.true(
      page.includes(`<p class="notice" id="client-host">This application is described by <strong>${host}</strong>.`),
      'the consent page names the document host prominently',
    );
    t.true(page.includes('<h1>Connect Browser Agent</h1>'));
    const params = oauth.validateAuthResponse(as, client, new URL(location), state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, verifier, insecure),
    );
    t.regex(tokens.access_token, /^aat_/);
    t.is(tokens.scope, 'svc:agent offline_access');
    t.is(await mcpStatus(server.url, tokens.access_token), 200);
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure),
    );
    t.is(await mcpStatus(server.url, refreshed.access_token), 200);

    const after = await stored();
    t.is(after.clients, before.clients, 'no client record: the document is the registration');
    const connection = (await server.app.store.tables.oauthConnections.scan([agent.wid]))
      .map((e) => e.value)
      .find((c) => c.clientId === clientId);
    t.like(connection, { clientId, clientName: 'Browser Agent', agentId: agent.agentId, endedAt: null });
    t.is(docs.hits(path), 1, 'one fetch: the token endpoint fetches nothing');
    const recorded = (await ledgerRecords(server, agent.wid, agent.cookie)).find(
      (r) => r.kind === 'oauth.connected' && r.subject === connection!.id,
    );
    t.like(recorded?.data, { clientId, clientName: 'Browser Agent', scope: 'svc:agent offline_access' });
  },
);

test.serial('the document is cached as its Cache-Control says: max-age, and no-store', async (t) => {
  docs.serve('/cached.json', (url) => ({
    headers: { 'cache-control': 'public, max-age=60' },
    body: documentFor(url, [REDIRECT]),
  }));
  docs.serve('/uncached.json', (url) => ({
    headers: { 'cache-control': 'no-store' },
    body: documentFor(url, [REDIRECT]),
  }));
  t.is((await openAuthorize(docs.url('/cached.json'))).status, 200);
  t.is((await openAuthorize(docs.url('/cached.json'))).status, 200);
  t.is(docs.hits('/cached.json'), 1, 'a second authorization within max-age does not fetch again');
  clock.advance(60_001);
  t.is((await openAuthorize(docs.url('/cached.json'))).status, 200);
  t.is(docs.hits('/cached.json'), 2, 'past max-age it is fetched again');
  await openAuthorize(docs.url('/uncached.json'));
  await openAuthorize(docs.url('/uncached.json'));
  t.is(docs.hits('/uncached.json'), 2, 'no-store: fetched every time');
});

test.serial('a person not signed in is sent to sign in before anything is fetched', async (t) => {
  docs.serve('/before-login.json', (url) => ({ body: documentFor(url, [REDIRECT]) }));
  const res = await openAuthorize(docs.url('/before-login.json'), REDIRECT, null);
  t.is(res.status, 302);
  t.regex(res.location ?? '', /^\/login\?next=/);
  t.is(docs.hits('/before-login.json'), 0);
});

const refusals: Array<{
  name: string;
  path: string;
  answer?: Parameters<DocumentServer['serve']>[1];
  clientId?: (url: string) => string;
  redirect?: string;
  problem: RegExp;
}> = [
  {
    name: 'a document naming another client_id',
    path: '/mismatch.json',
    answer: (url) => ({ body: documentFor(`${url}x`, [REDIRECT]) }),
    problem: /names another client_id than its own URL/,
  },
  {
    name: 'an oversized document',
    path: '/big.json',
    answer: (url) => ({ body: documentFor(url, [REDIRECT], { padding: 'x'.repeat(20_000) }) }),
    problem: /larger than 10240 bytes/,
  },
  {
    name: 'a document server that does not answer in time',
    path: '/slow.json',
    answer: { hang: true },
    problem: /did not arrive in time/,
  },
  {
    name: 'a client_id that is not https',
    path: '/plain.json',
    answer: (url) => ({ body: documentFor(url, [REDIRECT]) }),
    clientId: (url) => url.replace('https:', 'http:'),
    problem: /must be https/,
  },
  {
    name: 'a document whose redirect URI is neither https nor loopback',
    path: '/bad-redirect.json',
    answer: (url) => ({ body: documentFor(url, ['http://evil.example/cb']) }),
    redirect: 'http://evil.example/cb',
    problem: /neither https nor http on a loopback address/,
  },
  {
    name: 'a redirect_uri the document does not list',
    path: '/other-redirect.json',
    answer: (url) => ({ body: documentFor(url, [REDIRECT]) }),
    redirect: 'https://attacker.example/cb',
    problem: /not one of those in the application's metadata document/,
  },
  {
    name: 'a document asking for a client secret',
    path: '/confidential.json',
    answer: (url) => ({ body: documentFor(url, [REDIRECT], { token_endpoint_auth_method: 'client_secret_basic' }) }),
    problem: /token_endpoint_auth_method none/,
  },
  { name: 'a document that is not there', path: '/missing.json', problem: /answered 404/ },
  {
    name: 'a document that is not JSON',
    path: '/html.json',
    answer: { headers: { 'content-type': 'text/html' }, body: '<html></html>' },
    problem: /not served as application\/json/,
  },
  {
    name: 'a client_id without a path',
    path: '/',
    clientId: (url) => url.replace(/\/$/, ''),
    problem: /must have a path/,
  },
];

for (const r of refusals) {
  test.serial(`refused with a clear error page, nothing stored: ${r.name}`, async (t) => {
    if (r.answer) docs.serve(r.path, r.answer);
    const clientId = r.clientId ? r.clientId(docs.url(r.path)) : docs.url(r.path);
    const before = await stored();
    const res = await openAuthorize(clientId, r.redirect ?? REDIRECT);
    t.is(res.status, 400, 'an error page, never a redirect to an address the document did not vouch for');
    t.is(res.location, null);
    const problem = /<p class="notice notice-error" id="problem">([^<]*)<\/p>/.exec(res.html)?.[1] ?? '';
    t.regex(problem.replaceAll('&#39;', "'").replaceAll('&#x27;', "'"), r.problem);
    t.deepEqual(await stored(), before);
    if (r.clientId) t.is(docs.hits(r.path), 0, 'a refused URL is never fetched');
  });
}

test.serial(
  'the token endpoint: a URL client is public, with codes bound to it; a non-https one is invalid_client',
  async (t) => {
    const form = (fields: Record<string, string>) =>
      call(server.url, 'POST', '/oauth/token', {
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields).toString(),
      });
    const unknownCode = await form({
      grant_type: 'authorization_code',
      client_id: docs.url('/apps/browser-agent.json'),
      code: 'code_nothing',
      code_verifier: 'a'.repeat(43),
      redirect_uri: REDIRECT,
    });
    t.is(unknownCode.status, 400);
    t.is(unknownCode.body.error, 'invalid_grant');
    const plain = await form({
      grant_type: 'refresh_token',
      client_id: 'http://127.0.0.1/x.json',
      refresh_token: 'art_x',
    });
    t.is(plain.status, 401);
    t.is(plain.body.error, 'invalid_client');
  },
);

test('without oauth.allowPrivateClientMetadata a loopback document is refused by the vetted dispatcher', async (t) => {
  const strict = await serveInProcess({ clientMetadataCa: LOOPBACK_CA });
  try {
    const owner = await createAgent(strict);
    docs.serve('/private.json', (url) => ({ body: documentFor(url, [REDIRECT]) }));
    const as = await discover(strict);
    const { url } = await authorizeUrl(as, strict, { client_id: docs.url('/private.json') }, REDIRECT);
    const res = await fetch(url, { headers: { cookie: owner.cookie }, redirect: 'manual' });
    t.is(res.status, 400);
    t.regex(await res.text(), /allowed only with oauth\.allowPrivateClientMetadata/);
    t.is(docs.hits('/private.json'), 0);
  } finally {
    await stopAndClean(strict);
  }
});

/** The MCP SDK's provider for a client known by its metadata document; "visiting" the URL is the person consenting. */
class UrlClientProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  stored: OAuthTokens | undefined;
  verifier = '';
  pendingCode: string | null = null;
  requestedScope: string | null = null;
  readonly clientMetadataUrl: string;
  constructor(clientMetadataUrl: string) {
    this.clientMetadataUrl = clientMetadataUrl;
  }
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'Browser Agent', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' };
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
  codeVerifier() {
    return this.verifier;
  }
  async redirectToAuthorization(url: URL): Promise<void> {
    this.requestedScope = url.searchParams.get('scope');
    const { location } = await consent(server, url, agent.cookie);
    this.pendingCode = new URL(location).searchParams.get('code');
  }
}

test.serial('the MCP SDK client connects with its clientMetadataUrl, without registering', async (t) => {
  const path = '/apps/sdk-client.json';
  docs.serve(path, (url) => ({ headers: { 'cache-control': 'max-age=300' }, body: documentFor(url, [REDIRECT]) }));
  const provider = new UrlClientProvider(docs.url(path));
  const before = await stored();
  const transport = () => new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { authProvider: provider });
  const first = new Client({ name: 'sdk-cimd', version: '1.0.0' });
  await t.throwsAsync(first.connect(transport()), { instanceOf: UnauthorizedError });
  t.is(provider.info?.client_id, docs.url(path), 'the SDK used its URL as client_id');
  t.is(provider.requestedScope, 'svc:agent offline_access', 'the scope the /mcp challenge named');
  const finishing = transport();
  await finishing.finishAuth(provider.pendingCode!);
  const client = new Client({ name: 'sdk-cimd', version: '1.0.0' });
  await client.connect(finishing);
  t.true((await client.listTools()).tools.length >= 3);
  await client.close();
  t.regex(String(provider.stored?.refresh_token), /^art_/);
  t.is((await stored()).clients, before.clients);
});
