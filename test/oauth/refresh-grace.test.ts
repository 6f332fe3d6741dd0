import test from 'ava';
import * as oauth from 'oauth4webapi';
import { discoverAuthorizationServerMetadata, refreshAuthorization } from '@modelcontextprotocol/sdk/client/auth.js';
import { InvalidGrantError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { AuthorizationServerMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import { createAgent, type AgentFixture } from '../helpers/gate.js';
import { mcpStatus } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { manualClock } from '../helpers/clock.js';
import { freshDatabase } from '../helpers/postgres.js';
import { connect, insecure } from './support.js';

/**
 * The refresh grace window (issue 20 item 3): two refreshes with one refresh token at once (the
 * MCP SDK's own refreshAuthorization, twice, concurrently) both get the same new pair, and the
 * connection lives on; the same token presented again after the window (10 s by default) is a
 * stolen token's reuse and ends the whole connection, as does another client presenting it (at
 * any time).
 */
let server: ServedInProcess;
let agent: AgentFixture;
let metadata: AuthorizationServerMetadata;
const clock = manualClock();

test.before(async () => {
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '1000' }, clock });
  agent = await createAgent(server);
  metadata = (await discoverAuthorizationServerMetadata(server.url))!;
});

test.after.always(() => stopAndClean(server));

const sdkRefresh = (clientId: string, refreshToken: string) =>
  refreshAuthorization(server.url, {
    metadata,
    clientInformation: { client_id: clientId },
    refreshToken,
    resource: new URL(`${server.url}/mcp`),
  });

const connectionOf = async (clientId: string) =>
  (await server.app.store.tables.oauthConnections.scan([agent.wid]))
    .map((e) => e.value)
    .find((c) => c.clientId === clientId)!;

test.serial('two concurrent SDK refreshes get the same new pair, and the connection lives on', async (t) => {
  const { client, tokens } = await connect(server, agent.cookie);
  const [a, b] = await Promise.all([
    sdkRefresh(client.client_id, tokens.refresh_token!),
    sdkRefresh(client.client_id, tokens.refresh_token!),
  ]);
  t.is(a.access_token, b.access_token, 'the second refresh gets the pair the first was issued');
  t.is(a.refresh_token, b.refresh_token);
  t.not(a.refresh_token, tokens.refresh_token);
  t.is(await mcpStatus(server.url, a.access_token), 200, "the winner's access token works");
  t.is(await mcpStatus(server.url, tokens.access_token), 401, 'the old access token stopped');
  t.is((await connectionOf(client.client_id)).endedAt, null);

  // Still within the window, a third presentation gets the same pair again.
  clock.advance(9_000);
  const c = await sdkRefresh(client.client_id, tokens.refresh_token!);
  t.is(c.access_token, a.access_token);
  t.true(c.expires_in! <= 3600 - 9, 'expires_in counts from when the pair was issued');

  // The new refresh token rotates as usual.
  const next = await sdkRefresh(client.client_id, a.refresh_token!);
  t.not(next.access_token, a.access_token);
  t.is(await mcpStatus(server.url, next.access_token), 200);
  t.is((await connectionOf(client.client_id)).endedAt, null);
});

test.serial('a used refresh token presented after the window ends the whole connection', async (t) => {
  const { client, tokens } = await connect(server, agent.cookie);
  const fresh = await sdkRefresh(client.client_id, tokens.refresh_token!);
  clock.advance(10_001);
  const err = await t.throwsAsync(sdkRefresh(client.client_id, tokens.refresh_token!));
  t.true(err instanceof InvalidGrantError, String(err));
  t.is(await mcpStatus(server.url, fresh.access_token), 401, 'the pair issued at the first use stopped too');
  t.like(await connectionOf(client.client_id), { endedWhy: 'refresh token reused' });
  await t.throwsAsync(sdkRefresh(client.client_id, fresh.refresh_token!), { instanceOf: InvalidGrantError });
});

test.serial(
  'within the window, another client presenting the token gets nothing and ends the connection',
  async (t) => {
    const first = await connect(server, agent.cookie);
    const other = await connect(server, agent.cookie);
    const fresh = await sdkRefresh(first.client.client_id, first.tokens.refresh_token!);
    t.is(await mcpStatus(server.url, fresh.access_token), 200);
    const stolen = await oauth.refreshTokenGrantRequest(
      other.as,
      other.client,
      other.auth,
      first.tokens.refresh_token!,
      insecure,
    );
    const err = await t.throwsAsync(oauth.processRefreshTokenResponse(other.as, other.client, stolen));
    t.is((err as oauth.ResponseBodyError).error, 'invalid_grant');
    t.is(await mcpStatus(server.url, fresh.access_token), 401, 'the pair the first client was issued stopped');
    t.like(await connectionOf(first.client.client_id), { endedWhy: 'refresh token presented by another client' });
    await t.throwsAsync(sdkRefresh(first.client.client_id, fresh.refresh_token!), { instanceOf: InvalidGrantError });
    t.is((await connectionOf(other.client.client_id)).endedAt, null, "the other client's own connection is untouched");
  },
);

test.serial('an unused refresh token presented by another client ends its connection too', async (t) => {
  const first = await connect(server, agent.cookie);
  const other = await connect(server, agent.cookie);
  const stolen = await oauth.refreshTokenGrantRequest(
    other.as,
    other.client,
    other.auth,
    first.tokens.refresh_token!,
    insecure,
  );
  const err = await t.throwsAsync(oauth.processRefreshTokenResponse(other.as, other.client, stolen));
  t.is((err as oauth.ResponseBodyError).error, 'invalid_grant');
  t.is(await mcpStatus(server.url, first.tokens.access_token), 401);
  await t.throwsAsync(sdkRefresh(first.client.client_id, first.tokens.refresh_token!), {
    instanceOf: InvalidGrantError,
  });
});

test('with refreshGraceSeconds 0, a second refresh at once ends the connection, as before', async (t) => {
  const strict = await serveInProcess({ env: { SVC_OAUTH_REFRESH_GRACE_SECONDS: '0' } });
  try {
    const owner = await createAgent(strict);
    const { as, client, auth, tokens } = await connect(strict, owner.cookie);
    const first = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, auth, tokens.refresh_token!, insecure),
    );
    const again = await oauth.refreshTokenGrantRequest(as, client, auth, tokens.refresh_token!, insecure);
    const err = await t.throwsAsync(oauth.processRefreshTokenResponse(as, client, again));
    t.is((err as oauth.ResponseBodyError).error, 'invalid_grant');
    const status = await mcpStatus(strict.url, first.access_token);
    t.is(status, 401);
  } finally {
    await stopAndClean(strict);
  }
});

test('on PostgreSQL, where two refreshes really run at once, both still get the same pair', async (t) => {
  const db = await freshDatabase();
  const pgServer = await serveInProcess({ env: { SVC_STORE_URL: db.url, SVC_SIGNIN_RATE_PER_MINUTE: '1000' } });
  try {
    const owner = await createAgent(pgServer);
    const { client, tokens } = await connect(pgServer, owner.cookie);
    const pgMetadata = (await discoverAuthorizationServerMetadata(pgServer.url))!;
    const refresh = () =>
      refreshAuthorization(pgServer.url, {
        metadata: pgMetadata,
        clientInformation: { client_id: client.client_id },
        refreshToken: tokens.refresh_token!,
        resource: new URL(`${pgServer.url}/mcp`),
      });
    const pairs = await Promise.all([refresh(), refresh(), refresh()]);
    t.is(new Set(pairs.map((p) => p.access_token)).size, 1, 'one pair for all three');
    const status = await mcpStatus(pgServer.url, pairs[0]!.access_token);
    t.is(status, 200);
  } finally {
    await stopAndClean(pgServer);
    await db.drop();
  }
});
