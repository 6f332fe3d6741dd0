import test from 'ava';
import * as oauth from 'oauth4webapi';
import { createAgent, type AgentFixture } from '../helpers/gate.js';
import { call, mcpPost } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { manualClock } from '../helpers/clock.js';
import { authorizeUrl, connect, consent, discover, insecure, register } from './support.js';

/**
 * Issue 20 items 4 and 5: CORS on the endpoints a browser-based MCP client calls (any origin,
 * no credentials) and none on the pages a person uses; scopes_supported in both metadata
 * documents, the /mcp challenge naming the scope (and invalid_token for a bad token), and
 * offline_access deciding whether a refresh token is issued.
 */
let server: ServedInProcess;
let agent: AgentFixture;
const clock = manualClock();
const ORIGIN = 'https://inspector.example';
const SCOPES = ['svc:agent', 'offline_access'];

test.before(async () => {
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '1000' }, clock });
  agent = await createAgent(server);
});

test.after.always(() => stopAndClean(server));

const form = (fields: Record<string, string>) => ({
  headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(fields).toString(),
});

test.serial('CORS: metadata, registration, token and revocation answer any origin, without credentials', async (t) => {
  const answers = {
    'AS metadata': await call(server.url, 'GET', '/.well-known/oauth-authorization-server', {
      headers: { origin: ORIGIN },
    }),
    'protected-resource metadata': await call(server.url, 'GET', '/.well-known/oauth-protected-resource/mcp', {
      headers: { origin: ORIGIN },
    }),
    'root protected-resource metadata': await call(server.url, 'GET', '/.well-known/oauth-protected-resource', {
      headers: { origin: ORIGIN },
    }),
    registration: await call(server.url, 'POST', '/oauth/register', {
      headers: { origin: ORIGIN },
      json: { redirect_uris: ['http://127.0.0.1:5173/cb'] },
    }),
    'registration refused': await call(server.url, 'POST', '/oauth/register', {
      headers: { origin: ORIGIN },
      json: { redirect_uris: ['http://evil.example/cb'] },
    }),
    'token error': await call(
      server.url,
      'POST',
      '/oauth/token',
      form({ grant_type: 'refresh_token', client_id: 'mcp_x', refresh_token: 'art_x' }),
    ),
    revocation: await call(server.url, 'POST', '/oauth/revoke', form({ client_id: 'mcp_x', token: 'x' })),
  };
  t.is(answers.registration.status, 201);
  t.is(answers['registration refused'].status, 400);
  t.is(answers['token error'].status, 401);
  for (const [name, res] of Object.entries(answers)) {
    t.is(res.headers['access-control-allow-origin'], '*', name);
    t.is(res.headers['access-control-allow-credentials'], undefined, name);
  }
});

test.serial('CORS preflight: the token and registration endpoints allow a browser client', async (t) => {
  for (const [path, headers] of [
    ['/oauth/token', 'content-type, authorization'],
    ['/oauth/register', 'content-type'],
    ['/oauth/revoke', 'content-type'],
    ['/.well-known/oauth-authorization-server', 'mcp-protocol-version'],
    ['/.well-known/oauth-protected-resource/mcp', 'mcp-protocol-version'],
  ] as const) {
    const method = path.startsWith('/oauth') ? 'POST' : 'GET';
    const res = await call(server.url, 'OPTIONS', path, {
      headers: { origin: ORIGIN, 'access-control-request-method': method, 'access-control-request-headers': headers },
    });
    t.true(res.status === 200 || res.status === 204, `${path}: ${res.status}`);
    t.is(res.headers['access-control-allow-origin'], '*', path);
    t.is(res.headers['access-control-allow-methods'], method, path);
    const allowed = String(res.headers['access-control-allow-headers']).toLowerCase().split(',');
    for (const h of headers.split(', ')) t.true(allowed.includes(h), `${path} allows ${h}`);
    t.is(res.headers['access-control-allow-credentials'], undefined);
  }
});

test.serial('no CORS on /oauth/authorize and the consent page', async (t) => {
  const as = await discover(server);
  const client = await register(as, { redirect_uris: ['http://127.0.0.1:5173/cb'] });
  const { url } = await authorizeUrl(as, server, client, 'http://127.0.0.1:5173/cb');
  const page = await call(server.url, 'GET', url.pathname + url.search, {
    headers: { origin: ORIGIN, cookie: agent.cookie },
  });
  t.is(page.status, 200, 'the consent page');
  t.is(page.headers['access-control-allow-origin'], undefined);
  for (const method of ['GET', 'POST']) {
    const preflight = await call(server.url, 'OPTIONS', '/oauth/authorize', {
      headers: { origin: ORIGIN, 'access-control-request-method': method },
    });
    t.is(preflight.headers['access-control-allow-origin'], undefined, method);
  }
});

test.serial('scopes_supported in both metadata documents', async (t) => {
  const as = await call(server.url, 'GET', '/.well-known/oauth-authorization-server');
  t.deepEqual(as.body.scopes_supported, SCOPES);
  for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
    t.deepEqual((await call(server.url, 'GET', path)).body.scopes_supported, SCOPES, path);
  }
});

test.serial('the /mcp challenge names the scope; a bad or expired token adds error="invalid_token"', async (t) => {
  const mcp = (headers: Record<string, string>) =>
    mcpPost(server.url, undefined, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { headers });
  const base = `Bearer resource_metadata="${server.url}/.well-known/oauth-protected-resource/mcp", scope="svc:agent offline_access"`;
  const none = await mcp({});
  t.is(none.status, 401);
  t.is(none.headers['www-authenticate'], base, 'no token: no error code (RFC 6750 3.1)');

  for (const token of ['aat_unknown', 'ask_unknown']) {
    const bad = await mcp({ authorization: `Bearer ${token}` });
    t.is(bad.status, 401);
    t.true(
      String(bad.headers['www-authenticate']).startsWith(`${base}, error="invalid_token", error_description="`),
      token,
    );
  }

  const { tokens } = await connect(server, agent.cookie);
  t.is((await mcp({ authorization: `Bearer ${tokens.access_token}` })).status, 200);
  clock.advance(3_600_001);
  const expired = await mcp({ authorization: `Bearer ${tokens.access_token}` });
  t.is(expired.status, 401);
  t.regex(String(expired.headers['www-authenticate']), /, error="invalid_token", error_description="[^"]+"$/);
});

/** A connection asking for `scope` (absent: none asked). */
async function connectWithScope(scope: string | undefined) {
  const as = await discover(server);
  const redirectUri = 'http://127.0.0.1:5174/cb';
  const client = await register(as, { redirect_uris: [redirectUri] });
  const { url, verifier, state } = await authorizeUrl(
    as,
    server,
    client,
    redirectUri,
    scope === undefined ? {} : { scope },
  );
  const { location } = await consent(server, url, agent.cookie);
  const params = oauth.validateAuthResponse(as, client, new URL(location), state);
  return oauth.processAuthorizationCodeResponse(
    as,
    client,
    await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, verifier, insecure),
  );
}

test.serial('offline_access decides whether a refresh token is issued; unknown scopes are ignored', async (t) => {
  const cases: Array<[string | undefined, string, boolean]> = [
    [undefined, 'svc:agent offline_access', true],
    ['svc:agent offline_access', 'svc:agent offline_access', true],
    ['offline_access', 'svc:agent offline_access', true],
    ['svc:agent', 'svc:agent', false],
    ['openid svc:agent', 'svc:agent', false],
    ['mcp', 'svc:agent offline_access', true],
    ['', 'svc:agent offline_access', true],
  ];
  for (const [asked, granted, refresh] of cases) {
    const tokens = await connectWithScope(asked);
    t.is(tokens.scope, granted, `asked ${JSON.stringify(asked)}`);
    t.is(tokens.refresh_token !== undefined, refresh, `asked ${JSON.stringify(asked)}: refresh token`);
  }
});

test.serial('a scope that is not scope tokens goes back to the application as invalid_scope', async (t) => {
  const as = await discover(server);
  const redirectUri = 'http://127.0.0.1:5175/cb';
  const client = await register(as, { redirect_uris: [redirectUri] });
  const { url } = await authorizeUrl(as, server, client, redirectUri, { scope: 'svc:agent "quoted"' });
  const res = await fetch(url, { headers: { cookie: agent.cookie }, redirect: 'manual' });
  t.is(res.status, 302);
  const back = new URL(res.headers.get('location')!);
  t.is(back.origin + back.pathname, redirectUri);
  t.is(back.searchParams.get('error'), 'invalid_scope');
});
