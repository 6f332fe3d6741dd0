import test from 'ava';
import { bearer, call, signIn, assertError } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { withStore } from '../helpers/store.js';

/**
 * Each route takes exactly one caller kind; a credential of another kind on it is
 * not read at all (401 unauthenticated, as if nothing was sent).
 */

let server: ServedInProcess;
let wid: string;
let agentKey: string;
let removedAgentKey: string;
let inferenceKey: string;
let adminKey: string;
let revokedKey: string;
let serviceToken: string;
let cookie: string;

const UNKNOWN_ASK = `ask_${'A'.repeat(43)}`;

test.before(async () => {
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '1000' } });
  wid = server.boot.workspaceId!;
  await withStore(server.dataDir, async (app) => {
    const { agents, keys, serviceTokens } = app.services;
    const agent = await agents.create({ workspaceId: wid, name: 'billing-bot' });
    agentKey = (await keys.mint(wid, { scope: 'agent', agentId: agent.id }, 'test')).key;
    const doomed = await agents.create({ workspaceId: wid, name: 'doomed-bot' });
    removedAgentKey = (await keys.mint(wid, { scope: 'agent', agentId: doomed.id }, 'test')).key;
    await agents.remove(wid, doomed.id);
    inferenceKey = (await keys.mint(wid, { scope: 'inference', principal: 'ana@example.com', team: 'data' }, 'test'))
      .key;
    adminKey = (await keys.mint(wid, { scope: 'admin' }, 'test')).key;
    const revoked = await keys.mint(wid, { scope: 'inference' }, 'test');
    await keys.revoke(wid, revoked.id);
    revokedKey = revoked.key;
    serviceToken = (await serviceTokens.create(wid, { name: 'ci', scopes: ['agents:read'], expiresInDays: 30 })).token;
  });
  cookie = await signIn(server.url, server.boot.owner!.email, server.boot.owner!.password);
});

test.after.always(() => stopAndClean(server));

// Agent key

test('agent key: accepted on the agent route (no actions yet, so any id is not found)', async (t) => {
  const res = await call(server.url, 'GET', '/v1/actions/act_0000000000000000000000', { headers: bearer(agentKey) });
  assertError(t, res, 404, 'not_found');
});

test('agent key route: a workspace key (inference or admin) gives 403 agent_key_required', async (t) => {
  for (const key of [inferenceKey, adminKey]) {
    const res = await call(server.url, 'GET', '/v1/actions/act_0000000000000000000000', { headers: bearer(key) });
    assertError(t, res, 403, 'agent_key_required');
  }
});

test('a key whose agent was removed gives 403 agent_not_found on the agent route and on whoami', async (t) => {
  const gate = await call(server.url, 'GET', '/v1/actions/act_0000000000000000000000', {
    headers: bearer(removedAgentKey),
  });
  assertError(t, gate, 403, 'agent_not_found');
  const whoami = await call(server.url, 'GET', '/v1/whoami', { headers: bearer(removedAgentKey) });
  assertError(t, whoami, 403, 'agent_not_found');
});

test('revoked and unknown ask_ keys give 401 invalid_api_key on every key route', async (t) => {
  for (const key of [revokedKey, UNKNOWN_ASK]) {
    for (const path of ['/v1/actions/act_0000000000000000000000', '/v1/whoami', '/v1/models']) {
      const res = await call(server.url, 'GET', path, { headers: bearer(key) });
      assertError(t, res, 401, 'invalid_api_key');
    }
    const mint = await call(server.url, 'POST', '/v1/admin/keys', {
      headers: bearer(key),
      json: { scope: 'inference' },
    });
    assertError(t, mint, 401, 'invalid_api_key');
  }
});

test('no credential gives 401 unauthenticated on every authenticated route', async (t) => {
  const routes: Array<[string, string]> = [
    ['GET', '/v1/actions/act_0000000000000000000000'],
    ['GET', '/v1/whoami'],
    ['GET', '/v1/models'],
    ['GET', '/v1/admin/agents'],
    ['GET', '/api/me'],
    ['GET', `/api/w/${wid}/keys`],
  ];
  for (const [method, path] of routes) {
    const res = await call(server.url, method, path);
    assertError(t, res, 401, 'unauthenticated');
  }
  const mint = await call(server.url, 'POST', '/v1/admin/keys', { json: { scope: 'inference' } });
  assertError(t, mint, 401, 'unauthenticated');
});

// A credential of another kind is not read at all

test('a valid session cookie on /v1/models is not read: 401 unauthenticated', async (t) => {
  const me = await call(server.url, 'GET', '/api/me', { headers: { cookie } });
  t.is(me.status, 200, 'the cookie itself is valid');
  const res = await call(server.url, 'GET', '/v1/models', { headers: { cookie } });
  assertError(t, res, 401, 'unauthenticated');
});

test('a valid ims_ service token on the agent route is not read: 401 unauthenticated', async (t) => {
  const list = await call(server.url, 'GET', '/v1/admin/agents', { headers: bearer(serviceToken) });
  t.is(list.status, 200, 'the token itself is valid');
  const res = await call(server.url, 'GET', '/v1/actions/act_0000000000000000000000', {
    headers: bearer(serviceToken),
  });
  assertError(t, res, 401, 'unauthenticated');
  const models = await call(server.url, 'GET', '/v1/models', { headers: bearer(serviceToken) });
  assertError(t, models, 401, 'unauthenticated');
});

test('a valid admin ask_ key as bearer on /api/ routes is ignored: 401 unauthenticated', async (t) => {
  const me = await call(server.url, 'GET', '/api/me', { headers: bearer(adminKey) });
  assertError(t, me, 401, 'unauthenticated');
  const keys = await call(server.url, 'GET', `/api/w/${wid}/keys`, { headers: bearer(adminKey) });
  assertError(t, keys, 401, 'unauthenticated');
});

test('a valid ask_ key on /v1/admin/agents is not read: 401 unauthenticated', async (t) => {
  for (const key of [adminKey, inferenceKey, agentKey]) {
    const res = await call(server.url, 'GET', '/v1/admin/agents', { headers: bearer(key) });
    assertError(t, res, 401, 'unauthenticated');
  }
});

test('a bearer credential beside a valid session cookie does not change the console answer', async (t) => {
  const res = await call(server.url, 'GET', '/api/me', { headers: { cookie, ...bearer(UNKNOWN_ASK) } });
  t.is(res.status, 200);
  t.is(res.body.user.email, server.boot.owner!.email);
});

// Workspace keys

test('a workspace key works as bearer and as x-api-key on /v1/models', async (t) => {
  const viaBearer = await call(server.url, 'GET', '/v1/models', { headers: bearer(inferenceKey) });
  t.is(viaBearer.status, 200);
  t.is(viaBearer.body.object, 'list');
  t.true(Array.isArray(viaBearer.body.data));
  const viaHeader = await call(server.url, 'GET', '/v1/models', { headers: { 'x-api-key': inferenceKey } });
  t.is(viaHeader.status, 200);
  t.deepEqual(viaHeader.body, viaBearer.body);
});

test('x-api-key with an unknown key gives 401 invalid_api_key, like bearer', async (t) => {
  const res = await call(server.url, 'GET', '/v1/models', { headers: { 'x-api-key': UNKNOWN_ASK } });
  assertError(t, res, 401, 'invalid_api_key');
});

test('an agent key carries its own agent traffic: accepted on /v1/models and /v1/whoami', async (t) => {
  const models = await call(server.url, 'GET', '/v1/models', { headers: bearer(agentKey) });
  t.is(models.status, 200);
  const whoami = await call(server.url, 'GET', '/v1/whoami', { headers: bearer(agentKey) });
  t.is(whoami.status, 200);
  t.is(whoami.body.scope, 'agent');
  t.regex(whoami.body.agentId, /^agt_[0-9A-Za-z]{22}$/);
  t.false('key' in whoami.body);
  t.false('hash' in whoami.body);
});

test('an agent key on POST /v1/admin/keys gives 403 forbidden', async (t) => {
  const res = await call(server.url, 'POST', '/v1/admin/keys', {
    headers: bearer(agentKey),
    json: { scope: 'inference' },
  });
  assertError(t, res, 403, 'forbidden');
});

test('an inference key on POST /v1/admin/keys gives 403 forbidden naming the admin scope', async (t) => {
  const res = await call(server.url, 'POST', '/v1/admin/keys', {
    headers: bearer(inferenceKey),
    json: { scope: 'inference' },
  });
  assertError(t, res, 403, 'forbidden');
  t.regex(res.body.error.message, /admin/);
});

test('an admin key on POST /v1/admin/keys is accepted', async (t) => {
  const res = await call(server.url, 'POST', '/v1/admin/keys', {
    headers: bearer(adminKey),
    json: { scope: 'inference' },
  });
  t.is(res.status, 201);
  t.is(res.body.scope, 'inference');
});

test('whoami answers the key view of the caller, in its own workspace', async (t) => {
  const res = await call(server.url, 'GET', '/v1/whoami', { headers: bearer(inferenceKey) });
  t.is(res.status, 200);
  t.is(res.body.scope, 'inference');
  t.is(res.body.principal, 'ana@example.com');
  t.is(res.body.team, 'data');
  t.is(res.body.workspaceId, wid);
  t.is(res.body.revokedAt, null);
  t.false('key' in res.body);
  t.false('hash' in res.body);
});

test.serial('a key revoked by another process while the server runs is refused on its very next use', async (t) => {
  const minted = await withStore(server.dataDir, (app) => app.services.keys.mint(wid, { scope: 'inference' }, 'test'));
  t.is(
    (await call(server.url, 'GET', '/v1/whoami', { headers: bearer(minted.key) })).status,
    200,
    'the server has used the key',
  );
  await withStore(server.dataDir, (app) => app.services.keys.revoke(wid, minted.id));
  assertError(t, await call(server.url, 'GET', '/v1/whoami', { headers: bearer(minted.key) }), 401, 'invalid_api_key');
});

test.serial('an agent removed by another process: its key is refused on its very next use', async (t) => {
  const { key, agentId } = await withStore(server.dataDir, async (app) => {
    const agent = await app.services.agents.create({ workspaceId: wid, name: 'short-lived-bot' });
    return {
      key: (await app.services.keys.mint(wid, { scope: 'agent', agentId: agent.id }, 'test')).key,
      agentId: agent.id,
    };
  });
  assertError(t, await call(server.url, 'GET', '/v1/actions/act_unknown', { headers: bearer(key) }), 404, 'not_found');
  await withStore(server.dataDir, (app) => app.services.agents.remove(wid, agentId));
  const res = await call(server.url, 'GET', '/v1/actions/act_unknown', { headers: bearer(key) });
  assertError(t, res, 403, 'agent_not_found');
  t.is(res.body.error.agentId, agentId);
});
