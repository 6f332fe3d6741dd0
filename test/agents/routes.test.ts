import test from 'ava';
import { assertError, bearer, call, csrf, type Reply } from '../helpers/http.js';
import { expectStatus, otherWorkspace, ownerConsole, type Person } from '../helpers/console.js';
import { authorize, payment } from '../helpers/gate.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * Agents and their keys in the console: agent keys, CSRF on console writes, and an id of another
 * workspace that is simply not found.
 */

const AGENT_ID = /^agt_[0-9A-Za-z]{22}$/;
const KEY_ID = /^key_[0-9A-Za-z]{22}$/;
const KEY_VALUE = /^ask_[A-Za-z0-9_-]{43}$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
const NO_ACTION = '/v1/actions/act_0000000000000000000000';

let server: ServedInProcess;
/** The first-start owner's console, and the owner of another workspace. */
let owner: Person;
let other: Person;
let otherAgentId: string;

async function createAgent(body: Record<string, unknown>): Promise<Reply> {
  return expectStatus(await owner.send('POST', '/agents', body), 201, 'agent');
}

async function mintKey(agentId: string, name?: string): Promise<{ id: string; key: string }> {
  return expectStatus(
    await owner.send('POST', `/agents/${agentId}/keys`, name === undefined ? {} : { name }),
    201,
    'key',
  ).body;
}

/** Every agent of the workspace, following `next` with pages of `limit`. */
async function walkAgents(limit: number): Promise<{ ids: string[]; pages: number[] }> {
  const ids: string[] = [];
  const pages: number[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 1000; i += 1) {
    const res: Reply = await owner.get(
      `/agents?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    if (res.status !== 200) throw new Error(`list: ${res.status} ${res.text}`);
    ids.push(...res.body.data.map((a: { id: string }) => a.id));
    pages.push(res.body.data.length);
    cursor = res.body.next;
    if (cursor === null) return { ids, pages };
  }
  throw new Error('the agent list never ended');
}

test.before(async () => {
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '1000' } });
  other = await otherWorkspace(server);
  owner = await ownerConsole(server);
  otherAgentId = expectStatus(
    await other.send('POST', '/agents', { name: 'their-bot', actsFor: other.id }),
    201,
    'other agent',
  ).body.id;
});

test.after.always(() => stopAndClean(server));

// Agents

test('POST agents answers 201 with the agent in the decided shape, and GET shows the same', async (t) => {
  const res = await owner.send('POST', '/agents', {
    name: 'billing-bot',
    actsFor: owner.id,
    tags: ['team:billing', 'eu'],
  });
  t.is(res.status, 201, res.text);
  // the documented fields, and `blueprint` added (null: not registered from one).
  t.deepEqual(Object.keys(res.body).sort(), [
    'actsFor',
    'blueprint',
    'createdAt',
    'holds',
    'id',
    'name',
    'status',
    'tags',
  ]);
  t.regex(res.body.id, AGENT_ID);
  t.like(res.body, {
    name: 'billing-bot',
    actsFor: owner.id,
    tags: ['team:billing', 'eu'],
    status: 'running',
    holds: [],
    blueprint: null,
  });
  t.regex(res.body.createdAt, ISO);

  const one = await owner.get(`/agents/${res.body.id}`);
  t.is(one.status, 200, one.text);
  t.deepEqual(one.body, res.body);

  const list = await owner.get('/agents?limit=200');
  t.is(list.status, 200, list.text);
  t.deepEqual(
    list.body.data.find((a: { id: string }) => a.id === res.body.id),
    res.body,
  );
});

test('tags default to an empty list', async (t) => {
  const res = await owner.send('POST', '/agents', { name: 'plain-bot', actsFor: owner.id });
  t.is(res.status, 201, res.text);
  t.deepEqual(res.body.tags, []);
  t.is(res.body.status, 'running');
});

test('each agent gets its own id', async (t) => {
  const [a, b] = await Promise.all([createAgent({ name: 'twin' }), createAgent({ name: 'twin' })]);
  t.not(a.body.id, b.body.id);
});

test('a missing name gives 400 invalid_request naming the field name', async (t) => {
  const res = await owner.send('POST', '/agents', { actsFor: owner.id });
  assertError(t, res, 400, 'invalid_request');
  t.deepEqual(
    res.body.error.errors.map((e: { field: string }) => e.field),
    ['name'],
  );
});

test('actsFor naming a person of another workspace gives 400 invalid_request on the field actsFor, and no agent', async (t) => {
  const res = await owner.send('POST', '/agents', { name: 'stranger-bot', actsFor: other.id });
  assertError(t, res, 400, 'invalid_request');
  t.is(res.body.error.errors[0].field, 'actsFor');
  const list = await owner.get('/agents?limit=200');
  t.false(list.body.data.some((a: { name: string }) => a.name === 'stranger-bot'));
});

test('actsFor naming nobody at all gives 400 invalid_request on the field actsFor', async (t) => {
  const res = await owner.send('POST', '/agents', { name: 'ghost-bot', actsFor: 'usr_0000000000000000000000' });
  assertError(t, res, 400, 'invalid_request');
  t.is(res.body.error.errors[0].field, 'actsFor');
});

test('PATCH changes name and tags; GET and the ledger show the change', async (t) => {
  const agent = (await createAgent({ name: 'draft-bot', actsFor: owner.id, tags: ['old'] })).body;
  const res = await owner.send('PATCH', `/agents/${agent.id}`, { name: 'final-bot', tags: ['new', 'eu'] });
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body, { ...agent, name: 'final-bot', tags: ['new', 'eu'] });
  const one = await owner.get(`/agents/${agent.id}`);
  t.deepEqual(one.body, res.body);

  const records = (await owner.ledger()).filter((r) => r.subject === agent.id);
  t.deepEqual(
    records.map((r) => r.kind),
    ['agent.created', 'agent.updated'],
  );
  t.is(records[1]!.actor, `user:${owner.id}`);
  t.like(records[1]!.data, { name: 'final-bot', tags: ['new', 'eu'] });
});

test('PATCH with an empty body gives 400 invalid_request and changes nothing', async (t) => {
  const agent = (await createAgent({ name: 'steady-bot', actsFor: owner.id })).body;
  const res = await owner.send('PATCH', `/agents/${agent.id}`, {});
  assertError(t, res, 400, 'invalid_request');
  t.deepEqual((await owner.get(`/agents/${agent.id}`)).body, agent);
});

test('DELETE removes an agent: 200 {}, then 404 not_found, and its key answers 403 agent_not_found', async (t) => {
  const agent = (await createAgent({ name: 'doomed-bot', actsFor: owner.id })).body;
  const { key } = await mintKey(agent.id);
  const before = await call(server.url, 'GET', NO_ACTION, { headers: bearer(key) });
  assertError(t, before, 404, 'not_found');

  const res = await owner.send('DELETE', `/agents/${agent.id}`);
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body, {});

  assertError(t, await owner.get(`/agents/${agent.id}`), 404, 'not_found');
  assertError(t, await owner.send('PATCH', `/agents/${agent.id}`, { name: 'zombie' }), 404, 'not_found');
  assertError(t, await owner.send('DELETE', `/agents/${agent.id}`), 404, 'not_found');
  assertError(t, await owner.send('POST', `/agents/${agent.id}/keys`, {}), 404, 'not_found');
  assertError(t, await owner.get(`/agents/${agent.id}/mandate`), 404, 'not_found');
  const list = await owner.get('/agents?limit=200');
  t.false(list.body.data.some((a: { id: string }) => a.id === agent.id));

  const gate = await authorize(server, key, payment(100));
  assertError(t, gate, 403, 'agent_not_found');
  const poll = await call(server.url, 'GET', NO_ACTION, { headers: bearer(key) });
  assertError(t, poll, 403, 'agent_not_found');

  const records = (await owner.ledger()).filter((r) => r.subject === agent.id);
  t.deepEqual(
    records.map((r) => r.kind),
    ['agent.created', 'agent.removed'],
  );
  t.is(records[1]!.actor, `user:${owner.id}`);
});

test('an agent id of another workspace is not found on every agent route', async (t) => {
  const paths: Array<[string, string, unknown?]> = [
    ['GET', `/agents/${otherAgentId}`],
    ['PATCH', `/agents/${otherAgentId}`, { name: 'mine-now' }],
    ['POST', `/agents/${otherAgentId}/keys`, {}],
    ['GET', `/agents/${otherAgentId}/mandate`],
    ['PUT', `/agents/${otherAgentId}/mandate`, { rules: [] }],
    ['DELETE', `/agents/${otherAgentId}`],
  ];
  for (const [method, path, json] of paths) {
    const res = method === 'GET' ? await owner.get(path) : await owner.send(method, path, json);
    assertError(t, res, 404, 'not_found');
  }
  // Still there, unchanged, for its own workspace.
  const theirs = await other.get(`/agents/${otherAgentId}`);
  t.is(theirs.status, 200, theirs.text);
  t.like(theirs.body, { name: 'their-bot', status: 'running' });
});

test('an unknown agent id gives 404 not_found', async (t) => {
  assertError(t, await owner.get('/agents/agt_0000000000000000000000'), 404, 'not_found');
  assertError(t, await owner.send('PATCH', '/agents/agt_0000000000000000000000', { name: 'x' }), 404, 'not_found');
  assertError(t, await owner.send('DELETE', '/agents/agt_0000000000000000000000'), 404, 'not_found');
});

test("the owner of one workspace asking for another workspace's agents gets 404 not_found", async (t) => {
  const list = await call(server.url, 'GET', `/api/w/${other.wid}/agents`, { headers: { cookie: owner.cookie } });
  assertError(t, list, 404, 'not_found');
  const create = await call(server.url, 'POST', `/api/w/${other.wid}/agents`, {
    headers: { cookie: owner.cookie, ...csrf },
    json: { name: 'intruder' },
  });
  assertError(t, create, 404, 'not_found');
});

// Serial: no other test of this file removes an agent while pages are walked.
test.serial('GET agents pages with ?limit and the next cursor, skipping removed agents', async (t) => {
  const made = await Promise.all(
    ['page-a', 'page-b', 'page-c', 'page-d'].map((name) => createAgent({ name, actsFor: owner.id })),
  );
  const all = await owner.get('/agents?limit=200');
  t.is(all.status, 200, all.text);
  t.deepEqual(Object.keys(all.body).sort(), ['data', 'next']);
  t.is(all.body.next, null);

  const first = await owner.get('/agents?limit=1');
  t.is(first.body.data.length, 1);
  t.is(typeof first.body.next, 'string');
  const second = await owner.get(`/agents?limit=1&cursor=${encodeURIComponent(first.body.next)}`);
  t.is(second.body.data.length, 1);
  t.not(second.body.data[0].id, first.body.data[0].id);

  const walked = await walkAgents(2);
  t.is(new Set(walked.ids).size, walked.ids.length, 'no agent appears twice');
  t.deepEqual([...walked.ids].sort(), all.body.data.map((a: { id: string }) => a.id).sort());

  // A removed agent disappears from every page, and no page comes back short before the end.
  const gone = made[1]!.body.id;
  t.is((await owner.send('DELETE', `/agents/${gone}`)).status, 200);
  const after = await walkAgents(1);
  t.false(after.ids.includes(gone));
  t.is(after.ids.length, all.body.data.length - 1);
  t.true(
    after.pages.every((n) => n === 1),
    JSON.stringify(after.pages),
  );
});

test('?limit outside 1-200 gives 400 invalid_request on query.limit', async (t) => {
  for (const limit of ['0', '201', 'x']) {
    const res = await owner.get(`/agents?limit=${limit}`);
    assertError(t, res, 400, 'invalid_request');
    t.true(
      res.body.error.errors.some((e: { field: string }) => e.field === 'query.limit'),
      JSON.stringify(res.body.error.errors),
    );
  }
});

// CSRF

test('console writes on agent routes without x-svc-csrf give 403 csrf and change nothing', async (t) => {
  const agent = (await createAgent({ name: 'guarded-bot', actsFor: owner.id })).body;
  const noCsrf = (method: string, path: string, json?: unknown) =>
    call(server.url, method, owner.api(path), {
      headers: { cookie: owner.cookie },
      ...(json === undefined ? {} : { json }),
    });

  const create = await noCsrf('POST', '/agents', { name: 'forged-bot' });
  assertError(t, create, 403, 'csrf');
  assertError(t, await noCsrf('PATCH', `/agents/${agent.id}`, { name: 'forged' }), 403, 'csrf');
  assertError(t, await noCsrf('DELETE', `/agents/${agent.id}`), 403, 'csrf');
  const key = await noCsrf('POST', `/agents/${agent.id}/keys`, {});
  assertError(t, key, 403, 'csrf');
  t.is(key.body.key, undefined);
  assertError(t, await noCsrf('PUT', `/agents/${agent.id}/mandate`, { rules: [] }), 403, 'csrf');

  // From another origin, even with the header.
  const foreign = await call(server.url, 'POST', owner.api('/agents'), {
    headers: { cookie: owner.cookie, ...csrf, origin: 'https://evil.example' },
    json: { name: 'forged-bot' },
  });
  assertError(t, foreign, 403, 'csrf');

  t.deepEqual((await owner.get(`/agents/${agent.id}`)).body, agent);
  const list = await owner.get('/agents?limit=200');
  t.false(list.body.data.some((a: { name: string }) => a.name === 'forged-bot'));
});

// Agent keys

test("POST agent keys answers 201 { id, key } with an ask_ key that works as that agent's key", async (t) => {
  const agent = (await createAgent({ name: 'keyed-bot', actsFor: owner.id })).body;
  const res = await owner.send('POST', `/agents/${agent.id}/keys`, { name: 'laptop' });
  t.is(res.status, 201, res.text);
  t.regex(res.body.id, KEY_ID);
  t.regex(res.body.key, KEY_VALUE);
  t.is(res.headers['cache-control'], 'no-store');
  t.false('hash' in res.body);

  // An agent key on an agent route: past authentication, the action is simply not found.
  const poll = await call(server.url, 'GET', NO_ACTION, { headers: bearer(res.body.key) });
  assertError(t, poll, 404, 'not_found');

  // Shown once: the key list names the key and its agent, never the value.
  const keys = await owner.get('/keys?limit=200');
  t.is(keys.status, 200, keys.text);
  const row = keys.body.data.find((k: { id: string }) => k.id === res.body.id);
  t.like(row, { scope: 'agent', agentId: agent.id, name: 'laptop', revokedAt: null });
  for (const k of keys.body.data) {
    t.false('key' in k);
    t.false('hash' in k);
  }
  t.false(keys.text.includes(res.body.key));
});

test('a key can be minted without a body', async (t) => {
  const agent = (await createAgent({ name: 'bodyless-bot', actsFor: owner.id })).body;
  const res = await call(server.url, 'POST', owner.api(`/agents/${agent.id}/keys`), {
    headers: { cookie: owner.cookie, ...csrf },
  });
  t.is(res.status, 201, res.text);
  t.regex(res.body.key, KEY_VALUE);
});

test('two keys of one agent are different values and both work', async (t) => {
  const agent = (await createAgent({ name: 'two-key-bot', actsFor: owner.id })).body;
  const [a, b] = await Promise.all([mintKey(agent.id), mintKey(agent.id)]);
  t.not(a.key, b.key);
  t.not(a.id, b.id);
  for (const { key } of [a, b]) {
    assertError(t, await call(server.url, 'GET', NO_ACTION, { headers: bearer(key) }), 404, 'not_found');
  }
});

test('DELETE an agent key: 200 {}, then the key gets 401 invalid_api_key and the list shows it revoked', async (t) => {
  const agent = (await createAgent({ name: 'revoking-bot', actsFor: owner.id })).body;
  const kept = await mintKey(agent.id);
  const dropped = await mintKey(agent.id);

  const res = await owner.send('DELETE', `/agents/${agent.id}/keys/${dropped.id}`);
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body, {});

  assertError(t, await call(server.url, 'GET', NO_ACTION, { headers: bearer(dropped.key) }), 401, 'invalid_api_key');
  assertError(t, await authorize(server, dropped.key, payment(100)), 401, 'invalid_api_key');
  // The agent's other key is untouched.
  assertError(t, await call(server.url, 'GET', NO_ACTION, { headers: bearer(kept.key) }), 404, 'not_found');

  const keys = await owner.get('/keys?limit=200');
  t.regex(String(keys.body.data.find((k: { id: string }) => k.id === dropped.id)?.revokedAt), ISO);
  t.is(keys.body.data.find((k: { id: string }) => k.id === kept.id)?.revokedAt, null);

  assertError(t, await owner.send('DELETE', `/agents/${agent.id}/keys/${dropped.id}`), 404, 'not_found');
});

test("deleting another agent's key through this agent's path gives 404 and the key keeps working", async (t) => {
  const [mine, theirs] = await Promise.all([
    createAgent({ name: 'path-a', actsFor: owner.id }),
    createAgent({ name: 'path-b', actsFor: owner.id }),
  ]);
  const key = await mintKey(theirs.body.id);
  const res = await owner.send('DELETE', `/agents/${mine.body.id}/keys/${key.id}`);
  assertError(t, res, 404, 'not_found');
  assertError(t, await call(server.url, 'GET', NO_ACTION, { headers: bearer(key.key) }), 404, 'not_found');
  const keys = await owner.get('/keys?limit=200');
  t.is(keys.body.data.find((k: { id: string }) => k.id === key.id)?.revokedAt, null);
});

test("a workspace key cannot be deleted through an agent's key path", async (t) => {
  const agent = (await createAgent({ name: 'path-c', actsFor: owner.id })).body;
  const wkey = await owner.send('POST', '/keys', { scope: 'inference', name: 'not-an-agent-key' });
  t.is(wkey.status, 201, wkey.text);
  assertError(t, await owner.send('DELETE', `/agents/${agent.id}/keys/${wkey.body.id}`), 404, 'not_found');
  const whoami = await call(server.url, 'GET', '/v1/whoami', { headers: bearer(wkey.body.key) });
  t.is(whoami.status, 200, whoami.text);
});

test('an unknown key id gives 404 not_found', async (t) => {
  const agent = (await createAgent({ name: 'path-d', actsFor: owner.id })).body;
  assertError(t, await owner.send('DELETE', `/agents/${agent.id}/keys/key_0000000000000000000000`), 404, 'not_found');
});

test('a name holding a lone surrogate (valid JSON, not text) is 400 naming the field, never a 500', async (t) => {
  const res = await call(server.url, 'POST', owner.api('/agents'), {
    headers: { cookie: owner.cookie, ...csrf, 'content-type': 'application/json' },
    body: '{"name":"bot \\ud800"}',
  });
  assertError(t, res, 400, 'invalid_request');
  t.deepEqual(
    res.body.error.errors.map((e: { field: string }) => e.field),
    ['name'],
  );
});
