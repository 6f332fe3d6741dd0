import test from 'ava';
import * as oauth from 'oauth4webapi';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expectStatus } from '../helpers/console.js';
import { createAgent, payment, type AgentFixture } from '../helpers/gate.js';
import { call, csrf, mcpStatus, ownerSession, signIn } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { manualClock } from '../helpers/clock.js';
import { authorizeUrl, connect, consent, discover, insecure, register } from './support.js';

/**
 * The OAuth 2.1 authorization server (issue 7) with a second real client, oauth4webapi:
 * discovery, registration, PKCE, state and iss, code replay, refresh rotation and reuse,
 * revocation, the loopback port rule, invalid_target; and the access token used at /mcp exactly
 * as the agent's key.
 */
let server: ServedInProcess;
let agent: AgentFixture;
const clock = manualClock();

const mcpAs = async (token: string) => {
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return client;
};
test.before(async () => {
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '1000' }, clock });
  agent = await createAgent(server);
});

test.after.always(() => stopAndClean(server));

test.serial('discovery and protected-resource metadata name each other, byte for byte', async (t) => {
  const as = await discover(server);
  t.is(as.issuer, server.url);
  t.deepEqual(as.code_challenge_methods_supported, ['S256']);
  t.true(as.authorization_response_iss_parameter_supported);
  t.deepEqual(as.token_endpoint_auth_methods_supported, ['none', 'client_secret_post', 'client_secret_basic']);
  const pr = (await call(server.url, 'GET', '/.well-known/oauth-protected-resource/mcp')).body;
  t.deepEqual(pr.authorization_servers, [as.issuer]);
});

test.serial(
  'registration: 201 echoing every field, a secret only for confidential clients, no-store; bad metadata refused',
  async (t) => {
    const res = await call(server.url, 'POST', '/oauth/register', {
      json: { client_name: 'Desk', redirect_uris: ['https://desk.example/cb', 'http://localhost:8123/cb'] },
    });
    t.is(res.status, 201, res.text);
    t.is(res.headers['cache-control'], 'no-store');
    t.regex(res.body.client_id, /^mcp_[A-Za-z0-9_-]{43}$/);
    t.like(res.body, {
      client_name: 'Desk',
      redirect_uris: ['https://desk.example/cb', 'http://localhost:8123/cb'],
      token_endpoint_auth_method: 'none',
    });
    t.is(res.body.client_secret, undefined);
    const confidential = await call(server.url, 'POST', '/oauth/register', {
      json: {
        client_name: 'Server',
        redirect_uris: ['https://s.example/cb'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    });
    t.regex(confidential.body.client_secret, /^mcs_[A-Za-z0-9_-]{43}$/);
    for (const [body, error] of [
      [{ redirect_uris: ['http://evil.example/cb'] }, 'invalid_redirect_uri'],
      [{ redirect_uris: [] }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['https://a.example/cb#frag'] }, 'invalid_redirect_uri'],
      [
        { redirect_uris: ['https://a.example/cb'], token_endpoint_auth_method: 'private_key_jwt' },
        'invalid_client_metadata',
      ],
    ] as const) {
      const bad = await call(server.url, 'POST', '/oauth/register', { json: body });
      t.is(bad.status, 400, JSON.stringify(body));
      t.is(bad.body.error, error);
      t.is(typeof bad.body.error_description, 'string');
      t.is(bad.headers['cache-control'], 'no-store');
    }
  },
);

test.serial("a person connects a client to one agent: the access token works at /mcp as the agent's key", async (t) => {
  const { tokens } = await connect(server);
  t.regex(tokens.access_token, /^aat_/);
  t.regex(String(tokens.refresh_token), /^art_/);
  t.is(tokens.expires_in, 3600);
  t.is(tokens.scope, 'svc:agent offline_access', 'asked for no scope: the default, with a refresh token');
  const client = await mcpAs(tokens.access_token);
  const res = await client.callTool({ name: 'authorize_action', arguments: payment(100) });
  t.like((res as { structuredContent: object }).structuredContent, { decision: 'allow', agentId: agent.agentId });
  await client.close();
  const conns = await call(server.url, 'GET', `/api/w/${agent.wid}/connections`, { headers: { cookie: agent.cookie } });
  t.true(
    conns.body.data.some(
      (c: { agentId: string; clientName: string; endedAt: string | null }) =>
        c.agentId === agent.agentId && c.clientName === 'Test MCP client' && c.endedAt === null,
    ),
  );
});

test.serial(
  'the person ends a connection from the console: its tokens stop at once, and it is listed as ended',
  async (t) => {
    const headers = { cookie: agent.cookie };
    const listed = async () =>
      (await call(server.url, 'GET', `/api/w/${agent.wid}/connections`, { headers })).body.data as Array<{
        id: string;
        endedAt: string | null;
      }>;
    // The connection this test makes: the one listed afterwards that was not listed before (the
    // list is in id order, which says nothing of when each was made).
    const before = new Set((await listed()).map((c) => c.id));
    const { tokens } = await connect(server);
    t.is(await mcpStatus(server.url, tokens.access_token), 200);
    const made = (await listed()).filter((c) => !before.has(c.id));
    t.is(made.length, 1);
    const mine = made[0]!;
    t.is(mine.endedAt, null);
    const ended = await call(server.url, 'DELETE', `/api/w/${agent.wid}/connections/${mine.id}`, {
      headers: { ...headers, ...csrf },
    });
    t.is(ended.status, 200, ended.text);
    t.is(await mcpStatus(server.url, tokens.access_token), 401, 'the access token stopped');
    t.truthy((await listed()).find((c) => c.id === mine.id)?.endedAt);
    const unknown = await call(server.url, 'DELETE', `/api/w/${agent.wid}/connections/cnx_none`, {
      headers: { ...headers, ...csrf },
    });
    t.is(unknown.status, 404);
    t.is(unknown.body.error.type, 'not_found');
  },
);

test.serial(
  'refresh rotates the pair; the old access token stops; reusing a refresh token ends the whole connection',
  async (t) => {
    const { as, client, auth, tokens } = await connect(server);
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, auth, tokens.refresh_token!, insecure),
    );
    t.not(refreshed.access_token, tokens.access_token);
    t.not(refreshed.refresh_token, tokens.refresh_token);
    t.is(await mcpStatus(server.url, tokens.access_token), 401, 'the old access token stopped');
    t.is(await mcpStatus(server.url, refreshed.access_token), 200);
    // Past the grace window (10 s by default): a reuse is a stolen token's.
    clock.advance(10_001);
    const reuse = await oauth.refreshTokenGrantRequest(as, client, auth, tokens.refresh_token!, insecure);
    const err = await t.throwsAsync(oauth.processRefreshTokenResponse(as, client, reuse));
    t.is((err as oauth.ResponseBodyError).error, 'invalid_grant');
    t.is(await mcpStatus(server.url, refreshed.access_token), 401, 'every token of the connection stopped');
    const after = await oauth.refreshTokenGrantRequest(as, client, auth, refreshed.refresh_token!, insecure);
    await t.throwsAsync(oauth.processRefreshTokenResponse(as, client, after), { instanceOf: oauth.ResponseBodyError });
  },
);

test.serial('a code is used once: replayed, it fails and ends what it minted; a wrong verifier fails', async (t) => {
  const as = await discover(server);
  const redirectUri = 'http://127.0.0.1:40000/cb';
  const client = await register(as, { redirect_uris: [redirectUri] });
  const { url, verifier, state } = await authorizeUrl(as, server, client, redirectUri);
  const { location } = await consent(server, url, agent.cookie);
  const params = oauth.validateAuthResponse(as, client, new URL(location), state);
  t.is(new URL(location).searchParams.get('iss'), server.url);
  const bad = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    oauth.None(),
    params,
    redirectUri,
    oauth.generateRandomCodeVerifier(),
    insecure,
  );
  t.is(
    (await t.throwsAsync<oauth.ResponseBodyError>(oauth.processAuthorizationCodeResponse(as, client, bad)))!.error,
    'invalid_grant',
  );
  // The failed attempt spent the code too.
  const again = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    oauth.None(),
    params,
    redirectUri,
    verifier,
    insecure,
  );
  t.is(
    (await t.throwsAsync<oauth.ResponseBodyError>(oauth.processAuthorizationCodeResponse(as, client, again)))!.error,
    'invalid_grant',
  );

  const second = await authorizeUrl(as, server, client, redirectUri);
  const ok = oauth.validateAuthResponse(
    as,
    client,
    new URL((await consent(server, second.url, agent.cookie)).location),
    second.state,
  );
  const tokens = await oauth.processAuthorizationCodeResponse(
    as,
    client,
    await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), ok, redirectUri, second.verifier, insecure),
  );
  t.is(await mcpStatus(server.url, tokens.access_token), 200);
  const replay = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    oauth.None(),
    ok,
    redirectUri,
    second.verifier,
    insecure,
  );
  await t.throwsAsync(oauth.processAuthorizationCodeResponse(as, client, replay));
  t.is(await mcpStatus(server.url, tokens.access_token), 401, "the replayed code's tokens stopped");
});

test.serial('a confidential client must authenticate as it registered; an unknown grant type is named', async (t) => {
  const { client, tokens } = await connect(server, undefined, { token_endpoint_auth_method: 'client_secret_basic' });
  const form = (extra: Record<string, string>) =>
    new URLSearchParams({ client_id: client.client_id, ...extra }).toString();
  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    call(server.url, 'POST', path, {
      body,
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    });
  const noSecret = await post(
    '/oauth/token',
    form({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token! }),
  );
  t.is(noSecret.status, 401);
  t.is(noSecret.body.error, 'invalid_client');
  t.is(noSecret.headers['www-authenticate'], 'Basic realm="svc"');
  t.is(noSecret.headers['cache-control'], 'no-store');
  t.is(
    (await post('/oauth/revoke', form({ token: tokens.refresh_token! }))).status,
    401,
    'nor can it revoke without its secret',
  );
  t.is(await mcpStatus(server.url, tokens.access_token), 200, 'the refused calls changed nothing');
  const basic = {
    authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret as string}`).toString('base64')}`,
  };
  const odd = await post(
    '/oauth/token',
    new URLSearchParams({ grant_type: 'password', username: 'x', password: 'y' }).toString(),
    basic,
  );
  t.is(odd.status, 400);
  t.is(odd.body.error, 'unsupported_grant_type');
});

test.serial('revocation ends the connection and answers 200 {} whatever the token was', async (t) => {
  const { as, client, auth, tokens } = await connect(server);
  await oauth.processRevocationResponse(
    await oauth.revocationRequest(as, client, auth, tokens.refresh_token!, insecure),
  );
  t.is(await mcpStatus(server.url, tokens.access_token), 401);
  const unknown = await call(server.url, 'POST', '/oauth/revoke', {
    body: new URLSearchParams({ token: 'aat_nothing', client_id: client.client_id }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.is(unknown.status, 200);
  t.deepEqual(unknown.body, {});
});

test.serial('the loopback port rule, invalid_target, and errors that are shown rather than redirected', async (t) => {
  const as = await discover(server);
  const client = await register(as, { redirect_uris: ['http://127.0.0.1/cb', 'https://app.example/cb'] });
  const cookie = await ownerSession(server);
  const other = await authorizeUrl(as, server, client, 'http://127.0.0.1:61234/cb');
  t.true(
    (await consent(server, other.url, cookie)).location.startsWith('http://127.0.0.1:61234/cb?code='),
    'a loopback redirect may come back on any port',
  );

  const wrongTarget = await authorizeUrl(as, server, client, 'https://app.example/cb', {
    resource: 'https://elsewhere.example/mcp',
  });
  const res = await fetch(wrongTarget.url, { headers: { cookie }, redirect: 'manual' });
  t.is(res.status, 302);
  const back = new URL(res.headers.get('location')!);
  t.is(back.searchParams.get('error'), 'invalid_target');
  t.is(back.searchParams.get('state'), wrongTarget.state);
  t.is(back.searchParams.get('iss'), server.url);

  const noPkce = new URL(wrongTarget.url);
  noPkce.searchParams.set('resource', `${server.url}/mcp`);
  noPkce.searchParams.delete('code_challenge');
  t.is(
    new URL(
      (await fetch(noPkce, { headers: { cookie }, redirect: 'manual' })).headers.get('location')!,
    ).searchParams.get('error'),
    'invalid_request',
  );

  const notRegistered = await authorizeUrl(as, server, client, 'https://app.example/other');
  const page = await fetch(notRegistered.url, { headers: { cookie }, redirect: 'manual' });
  t.is(page.status, 400, 'an unregistered redirect is an error page, never a redirect');
  t.regex(await page.text(), /not one this application registered/);
  const unknownClient = new URL(notRegistered.url);
  unknownClient.searchParams.set('client_id', 'mcp_nobody');
  t.is((await fetch(unknownClient, { redirect: 'manual' })).status, 400);

  const signedOut = await fetch(other.url, { redirect: 'manual' });
  t.is(signedOut.status, 302);
  t.true(
    signedOut.headers.get('location')!.startsWith('/login?next=%2Foauth%2Fauthorize%3F'),
    'sign in first, then back',
  );
  // Nobody is bounced to the application's address without signing in, not even with an error.
  const bounce = new URL(other.url);
  bounce.searchParams.set('response_type', 'token');
  t.true((await fetch(bounce, { redirect: 'manual' })).headers.get('location')!.startsWith('/login?next='));

  const denied = await consent(
    server,
    (await authorizeUrl(as, server, client, 'https://app.example/cb')).url,
    cookie,
    'deny',
  );
  t.is(new URL(denied.location).searchParams.get('error'), 'access_denied');

  // A consent form connects once: posted again, it is refused.
  const html = await (
    await fetch((await authorizeUrl(as, server, client, 'https://app.example/cb')).url, { headers: { cookie } })
  ).text();
  const form = new URLSearchParams({
    request: /name="request" value="([^"]+)"/.exec(html)![1]!,
    agent: /name="agent" value="([^"]+)"/.exec(html)![1]!,
    decision: 'allow',
  });
  const post = () =>
    fetch(`${server.url}/oauth/authorize`, {
      method: 'POST',
      body: form,
      headers: { cookie, origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
      redirect: 'manual',
    });
  t.is((await post()).status, 302);
  t.is((await post()).status, 403);
});

test.serial('freezing the agent or removing the person ends their connections at once', async (t) => {
  const first = await connect(server);
  t.is(await mcpStatus(server.url, first.tokens.access_token), 200);
  expectStatus(
    await call(server.url, 'POST', `/api/w/${agent.wid}/agents/${agent.agentId}/stop`, {
      headers: { cookie: agent.cookie, 'x-svc-csrf': '1' },
      json: { reason: 'oauth test' },
    }),
    200,
    'stop',
  );
  expectStatus(
    await call(server.url, 'POST', `/api/w/${agent.wid}/agents/${agent.agentId}/restart`, {
      headers: { cookie: agent.cookie, 'x-svc-csrf': '1' },
    }),
    200,
    'restart',
  );
  t.is(
    await mcpStatus(server.url, first.tokens.access_token),
    401,
    'a restart does not bring an ended connection back',
  );
  const refresh = await oauth.refreshTokenGrantRequest(
    first.as,
    first.client,
    first.auth,
    first.tokens.refresh_token!,
    insecure,
  );
  await t.throwsAsync(oauth.processRefreshTokenResponse(first.as, first.client, refresh));

  // A member connects the agent that acts for them; removing the member ends it.
  const member = expectStatus(
    await call(server.url, 'POST', `/api/w/${agent.wid}/members`, {
      headers: { cookie: agent.cookie, 'x-svc-csrf': '1' },
      json: { email: 'leaver@example.com', name: 'Leaver', role: 'member', password: 'a-long-password-1' },
    }),
    201,
    'member',
  ).body;
  expectStatus(
    await call(server.url, 'POST', `/api/w/${agent.wid}/agents`, {
      headers: { cookie: agent.cookie, 'x-svc-csrf': '1' },
      json: { name: 'leavers-bot', actsFor: member.id },
    }),
    201,
    'agent',
  );
  // A password chosen by someone else is replaced first; that answers a fresh session.
  const initial = await signIn(server.url, 'leaver@example.com', 'a-long-password-1');
  const changed = expectStatus(
    await call(server.url, 'PUT', '/api/me/password', {
      headers: { cookie: initial, 'x-svc-csrf': '1' },
      json: { currentPassword: 'a-long-password-1', newPassword: 'my-own-password-22' },
    }),
    200,
    'password',
  );
  const memberCookie = await signIn(server.url, 'leaver@example.com', 'my-own-password-22');
  t.truthy(changed.headers['set-cookie']);
  const theirs = await connect(server, memberCookie);
  t.is(await mcpStatus(server.url, theirs.tokens.access_token), 200);
  expectStatus(
    await call(server.url, 'DELETE', `/api/w/${agent.wid}/members/${member.id}`, {
      headers: { cookie: agent.cookie, 'x-svc-csrf': '1' },
    }),
    200,
    'remove',
  );
  t.is(await mcpStatus(server.url, theirs.tokens.access_token), 401);
});
