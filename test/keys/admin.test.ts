import test from 'ava';
import { bearer, call, csrf, signIn, assertError, ownerSession, type Reply } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { withStore } from '../helpers/store.js';

/** Workspace keys minted by an admin key and in the console. */

const KEY_PATTERN = /^ask_[A-Za-z0-9_-]{43}$/;

let server: ServedInProcess;
let wid: string;
let otherWid: string;
let adminKey: string;
let agentId: string;
let ownerCookie: string;
let memberCookie: string;
let otherOwnerCookie: string;
let otherKeyId: string;

test.before(async () => {
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '1000' } });
  wid = server.boot.workspaceId!;
  await withStore(server.dataDir, async (app) => {
    const { agents, keys, people } = app.services;
    adminKey = (await keys.mint(wid, { scope: 'admin', name: 'root' }, 'test')).key;
    agentId = (await agents.create({ workspaceId: wid, name: 'billing-bot' })).id;
    await people.addMember({
      workspaceId: wid,
      email: 'member@example.com',
      password: 'member-password-1',
      role: 'member',
    });
    otherWid = (
      await people.createWorkspace({
        name: 'Other',
        ownerEmail: 'owner@other.example',
        ownerPassword: 'other-password-1',
      })
    ).workspaceId;
    otherKeyId = (await keys.mint(otherWid, { scope: 'inference', name: 'theirs' }, 'test')).id;
  });
  [ownerCookie, memberCookie, otherOwnerCookie] = await Promise.all([
    ownerSession(server),
    signIn(server.url, 'member@example.com', 'member-password-1'),
    signIn(server.url, 'owner@other.example', 'other-password-1'),
  ]);
});

test.after.always(() => stopAndClean(server));

// POST /v1/admin/keys (admin key)

test('an admin key mints a key: 201 with the value once and the bindings echoed', async (t) => {
  const res = await call(server.url, 'POST', '/v1/admin/keys', {
    headers: bearer(adminKey),
    json: {
      scope: 'inference',
      name: 'support-bots',
      principal: 'ana@example.com',
      team: 'support',
      defaultTaskClass: 'support.triage',
      policyProfile: 'eu-only',
    },
  });
  t.is(res.status, 201, res.text);
  t.regex(res.body.key, KEY_PATTERN);
  t.regex(res.body.id, /^key_[0-9A-Za-z]{22}$/);
  t.like(res.body, {
    scope: 'inference',
    name: 'support-bots',
    principal: 'ana@example.com',
    team: 'support',
    defaultTaskClass: 'support.triage',
    policyProfile: 'eu-only',
    agentId: null,
    workspaceId: wid,
    revokedAt: null,
  });
  t.false('hash' in res.body);
  t.is(res.headers['cache-control'], 'no-store');

  const whoami = await call(server.url, 'GET', '/v1/whoami', { headers: bearer(res.body.key) });
  t.is(whoami.status, 200, whoami.text);
  const { key: _key, ...view } = res.body;
  t.deepEqual(whoami.body, view);
  t.false('key' in whoami.body);
  t.false('hash' in whoami.body);
  t.false(whoami.text.includes(res.body.key));
});

test('scope defaults to inference', async (t) => {
  const res = await call(server.url, 'POST', '/v1/admin/keys', { headers: bearer(adminKey), json: {} });
  t.is(res.status, 201, res.text);
  t.is(res.body.scope, 'inference');
  t.regex(res.body.key, KEY_PATTERN);
});

test('each minted key is a different value', async (t) => {
  const [a, b] = await Promise.all([
    call(server.url, 'POST', '/v1/admin/keys', { headers: bearer(adminKey), json: { scope: 'inference' } }),
    call(server.url, 'POST', '/v1/admin/keys', { headers: bearer(adminKey), json: { scope: 'inference' } }),
  ]);
  t.not(a.body.key, b.body.key);
  t.not(a.body.id, b.body.id);
});

test('an admin key mints an agent key bound to the agent, and it works on the agent route', async (t) => {
  const res = await call(server.url, 'POST', '/v1/admin/keys', {
    headers: bearer(adminKey),
    json: { scope: 'agent', agentId },
  });
  t.is(res.status, 201, res.text);
  t.is(res.body.scope, 'agent');
  t.is(res.body.agentId, agentId);
  const gate = await call(server.url, 'GET', '/v1/actions/act_0000000000000000000000', {
    headers: bearer(res.body.key),
  });
  t.is(gate.status, 404);
  t.is(gate.body.error.type, 'not_found');
});

test('scope agent without agentId gives 400 invalid_request naming the field agentId', async (t) => {
  const res = await call(server.url, 'POST', '/v1/admin/keys', { headers: bearer(adminKey), json: { scope: 'agent' } });
  assertError(t, res, 400, 'invalid_request');
  t.true(Array.isArray(res.body.error.errors));
  t.true(
    res.body.error.errors.some((e: { field: string | null }) => e.field === 'agentId'),
    JSON.stringify(res.body.error.errors),
  );
});

test('scope agent with an agent of no such id gives 400 invalid_request naming agentId', async (t) => {
  const res = await call(server.url, 'POST', '/v1/admin/keys', {
    headers: bearer(adminKey),
    json: { scope: 'agent', agentId: 'agt_0000000000000000000000' },
  });
  assertError(t, res, 400, 'invalid_request');
  t.deepEqual(
    res.body.error.errors.map((e: { field: string }) => e.field),
    ['agentId'],
  );
});

test('every malformed field is listed, not only the first', async (t) => {
  const res = await call(server.url, 'POST', '/v1/admin/keys', {
    headers: bearer(adminKey),
    json: { scope: 'root', defaultTaskClass: 'Not A Class' },
  });
  assertError(t, res, 400, 'invalid_request');
  const fields = res.body.error.errors.map((e: { field: string }) => e.field).sort();
  t.deepEqual(fields, ['defaultTaskClass', 'scope']);
  t.is(res.body.error.message, res.body.error.errors.map((e: { message: string }) => e.message).join('; '));
});

// Console: /api/w/{wid}/keys (owner, admin)

test('console: an owner mints a key (201, no-store) and the list shows it without key or hash', async (t) => {
  const created = await call(server.url, 'POST', `/api/w/${wid}/keys`, {
    headers: { cookie: ownerCookie, ...csrf },
    json: { scope: 'inference', name: 'console-made', team: 'web' },
  });
  t.is(created.status, 201, created.text);
  t.regex(created.body.key, KEY_PATTERN);
  t.like(created.body, { scope: 'inference', name: 'console-made', team: 'web', workspaceId: wid });
  t.is(created.headers['cache-control'], 'no-store');

  const list = await call(server.url, 'GET', `/api/w/${wid}/keys?limit=200`, { headers: { cookie: ownerCookie } });
  t.is(list.status, 200, list.text);
  t.deepEqual(Object.keys(list.body).sort(), ['data', 'next']);
  const row = list.body.data.find((k: { id: string }) => k.id === created.body.id);
  t.truthy(row);
  t.like(row, { scope: 'inference', name: 'console-made', team: 'web', revokedAt: null });
  for (const k of list.body.data) {
    t.false('key' in k);
    t.false('hash' in k);
  }
  t.false(list.text.includes(created.body.key));
});

// Serial: ava runs serial tests before the concurrent ones, so no key is minted meanwhile.
test.serial('console: the key list pages with ?limit= and the next cursor', async (t) => {
  for (const name of ['page-a', 'page-b', 'page-c']) {
    const res = await call(server.url, 'POST', `/api/w/${wid}/keys`, {
      headers: { cookie: ownerCookie, ...csrf },
      json: { name },
    });
    t.is(res.status, 201);
  }
  const first = await call(server.url, 'GET', `/api/w/${wid}/keys?limit=1`, { headers: { cookie: ownerCookie } });
  t.is(first.status, 200, first.text);
  t.is(first.body.data.length, 1);
  t.is(typeof first.body.next, 'string');
  const second = await call(
    server.url,
    'GET',
    `/api/w/${wid}/keys?limit=1&cursor=${encodeURIComponent(first.body.next)}`,
    { headers: { cookie: ownerCookie } },
  );
  t.is(second.status, 200, second.text);
  t.is(second.body.data.length, 1);
  t.not(second.body.data[0].id, first.body.data[0].id);

  // Following next to the end visits every key once, and the last page says next: null.
  const all = await call(server.url, 'GET', `/api/w/${wid}/keys?limit=200`, { headers: { cookie: ownerCookie } });
  const seen: string[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 500; i += 1) {
    const page: Reply = await call(
      server.url,
      'GET',
      `/api/w/${wid}/keys?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      { headers: { cookie: ownerCookie } },
    );
    seen.push(...page.body.data.map((k: { id: string }) => k.id));
    cursor = page.body.next;
    if (cursor === null) break;
  }
  t.is(cursor, null);
  t.is(new Set(seen).size, seen.length, 'no key appears twice');
  t.is(all.body.next, null);
  t.deepEqual([...seen].sort(), all.body.data.map((k: { id: string }) => k.id).sort());
  t.true(seen.length >= 4, 'the admin key and the three minted here');
});

test('console: ?limit outside 1-200 gives 400 invalid_request', async (t) => {
  for (const limit of ['0', '201', 'x']) {
    const res = await call(server.url, 'GET', `/api/w/${wid}/keys?limit=${limit}`, {
      headers: { cookie: ownerCookie },
    });
    assertError(t, res, 400, 'invalid_request');
    t.true(
      res.body.error.errors.some((e: { field: string }) => e.field === 'query.limit'),
      JSON.stringify(res.body.error.errors),
    );
  }
});

test('console: DELETE revokes (200 {}) and the key then gets 401 invalid_api_key', async (t) => {
  const created = await call(server.url, 'POST', `/api/w/${wid}/keys`, {
    headers: { cookie: ownerCookie, ...csrf },
    json: { name: 'short-lived' },
  });
  t.is(created.status, 201);
  t.is((await call(server.url, 'GET', '/v1/models', { headers: bearer(created.body.key) })).status, 200);

  const revoked = await call(server.url, 'DELETE', `/api/w/${wid}/keys/${created.body.id}`, {
    headers: { cookie: ownerCookie, ...csrf },
  });
  t.is(revoked.status, 200, revoked.text);
  t.deepEqual(revoked.body, {});

  for (const path of ['/v1/models', '/v1/whoami']) {
    const res = await call(server.url, 'GET', path, { headers: bearer(created.body.key) });
    assertError(t, res, 401, 'invalid_api_key');
  }
  const list = await call(server.url, 'GET', `/api/w/${wid}/keys?limit=200`, { headers: { cookie: ownerCookie } });
  const row = list.body.data.find((k: { id: string }) => k.id === created.body.id);
  t.regex(String(row?.revokedAt), /^\d{4}-\d\d-\d\dT/);

  const again = await call(server.url, 'DELETE', `/api/w/${wid}/keys/${created.body.id}`, {
    headers: { cookie: ownerCookie, ...csrf },
  });
  assertError(t, again, 404, 'not_found');
});

test('console: a member (role member) gets 403 forbidden naming owner or admin', async (t) => {
  const list = await call(server.url, 'GET', `/api/w/${wid}/keys`, { headers: { cookie: memberCookie } });
  assertError(t, list, 403, 'forbidden');
  t.regex(list.body.error.message, /owner|admin/);
  const mint = await call(server.url, 'POST', `/api/w/${wid}/keys`, {
    headers: { cookie: memberCookie, ...csrf },
    json: { name: 'sneaky' },
  });
  assertError(t, mint, 403, 'forbidden');
  t.regex(mint.body.error.message, /owner|admin/);
  t.is(mint.body.key, undefined);
});

test('console: the owner of workspace A asking for workspace B keys gets 404 not_found', async (t) => {
  const list = await call(server.url, 'GET', `/api/w/${otherWid}/keys`, { headers: { cookie: ownerCookie } });
  assertError(t, list, 404, 'not_found');
  const mint = await call(server.url, 'POST', `/api/w/${otherWid}/keys`, {
    headers: { cookie: ownerCookie, ...csrf },
    json: { name: 'x' },
  });
  assertError(t, mint, 404, 'not_found');
  const revoke = await call(server.url, 'DELETE', `/api/w/${otherWid}/keys/${otherKeyId}`, {
    headers: { cookie: ownerCookie, ...csrf },
  });
  assertError(t, revoke, 404, 'not_found');
  // The other workspace's own owner still sees its key, unrevoked.
  const theirs = await call(server.url, 'GET', `/api/w/${otherWid}/keys`, { headers: { cookie: otherOwnerCookie } });
  t.is(theirs.status, 200);
  t.like(
    theirs.body.data.find((k: { id: string }) => k.id === otherKeyId),
    { name: 'theirs', revokedAt: null },
  );
});

test('console: a key id of another workspace is not found from this one', async (t) => {
  const res = await call(server.url, 'DELETE', `/api/w/${wid}/keys/${otherKeyId}`, {
    headers: { cookie: ownerCookie, ...csrf },
  });
  assertError(t, res, 404, 'not_found');
});

test('console: a workspace id of the wrong shape gives 400 invalid_request', async (t) => {
  const res = await call(server.url, 'GET', '/api/w/not-a-workspace/keys', { headers: { cookie: ownerCookie } });
  assertError(t, res, 400, 'invalid_request');
});
