import test from 'ava';
import { createHash } from 'node:crypto';
import { assertError, call, type Reply } from '../helpers/http.js';
import {
  expectStatus,
  ledgerPages,
  otherWorkspace,
  ownerConsole,
  type LedgerRecord,
  type Person,
} from '../helpers/console.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * GET /api/w/{wid}/ledger?after=INDEX: the workspace's records in
 * index order, `{ index, id, at, workspaceId, actor, kind, subject, data }`, never a secret.
 */

const RECORD_ID = /^evr_[0-9A-Za-z]{22}$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

let server: ServedInProcess;
/** The first-start owner's console, and the owner of another workspace. */
let owner: Person;
let other: Person;
/** What the console calls of test.before made, in order. */
let agentId: string;
let keyId: string;
let keyValue: string;
let ruleIds: string[];

/** A console write of test.before, which must succeed. */
const send = async (method: string, path: string, json?: unknown): Promise<Reply> => {
  const res = await owner.send(method, path, json);
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
  return res;
};

test.before(async () => {
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '1000' } });
  other = await otherWorkspace(server);
  owner = await ownerConsole(server);

  agentId = (await send('POST', '/agents', { name: 'ledgered-bot', actsFor: owner.id, tags: ['eu'] })).body.id;
  const minted = await send('POST', `/agents/${agentId}/keys`, { name: 'laptop' });
  keyId = minted.body.id;
  keyValue = minted.body.key;
  ruleIds = (await send('PUT', `/agents/${agentId}/mandate`, { rules: [{ actions: ['email'] }] })).body.rules.map(
    (r: { id: string }) => r.id,
  );
  await send('PATCH', `/agents/${agentId}`, { name: 'ledgered-bot-2' });
  await send('DELETE', `/agents/${agentId}/keys/${keyId}`);
  await send('DELETE', `/agents/${agentId}`);

  // The other workspace writes its own ledger, which must not show here.
  expectStatus(await other.send('POST', '/agents', { name: 'their-bot' }), 201, 'other agent');
});

test.after.always(() => stopAndClean(server));

test('records have the decided shape and indexes 0..n-1 in order', async (t) => {
  const res = await owner.get('/ledger?limit=200');
  t.is(res.status, 200, res.text);
  t.deepEqual(Object.keys(res.body).sort(), ['data', 'next']);
  t.is(res.body.next, null);
  const records = res.body.data as LedgerRecord[];
  t.true(records.length >= 6);
  records.forEach((r, i) => {
    t.deepEqual(Object.keys(r).sort(), ['actor', 'at', 'data', 'id', 'index', 'kind', 'subject', 'workspaceId']);
    t.is(r.index, i);
    t.regex(r.id, RECORD_ID);
    t.regex(r.at, ISO);
    t.is(r.workspaceId, owner.wid);
    t.is(typeof r.kind, 'string');
    t.is(typeof r.subject, 'string');
    t.is(typeof r.data, 'object');
  });
  t.is(new Set(records.map((r) => r.id)).size, records.length);
  const times = records.map((r) => Date.parse(r.at));
  t.deepEqual(
    times,
    [...times].sort((a, b) => a - b),
  );
});

test("the console's changes to an agent appear in order, by the owner", async (t) => {
  const { records } = await ledgerPages(server, owner.wid, owner.cookie, 200);
  const mine = records.filter((r) => r.subject === agentId || r.subject === keyId);
  t.deepEqual(
    mine.map((r) => r.kind),
    ['agent.created', 'key.minted', 'mandate.updated', 'agent.updated', 'key.revoked', 'agent.removed'],
  );
  for (const r of mine) t.is(r.actor, `user:${owner.id}`);
  t.deepEqual(mine[0]!.data, { name: 'ledgered-bot', actsFor: owner.id, tags: ['eu'] });
  t.deepEqual(mine[1]!.data, { scope: 'agent', name: 'laptop', agentId });
  t.deepEqual(
    mine[2]!.data.rules.map((r: { id: string }) => r.id),
    ruleIds,
  );
  t.deepEqual(mine[3]!.data, { name: 'ledgered-bot-2' });
  t.deepEqual(mine[4]!.data, { scope: 'agent', agentId });
  t.is(mine[1]!.subject, keyId);
  t.is(mine[4]!.subject, keyId);
});

test('key minting is recorded without the key value or its hash anywhere', async (t) => {
  const res = await owner.get('/ledger?limit=200');
  const minted = res.body.data.filter(
    (r: { kind: string; subject: string }) => r.kind === 'key.minted' && r.subject === keyId,
  );
  t.is(minted.length, 1);
  t.false(res.text.includes(keyValue));
  t.false(res.text.includes(keyValue.slice(4)), 'not even without its prefix');
  for (const encoding of ['hex', 'base64', 'base64url'] as const) {
    const hash = createHash('sha256').update(keyValue).digest(encoding);
    t.false(res.text.includes(hash), encoding);
  }
  t.false(/"(key|hash|secret)"/.test(JSON.stringify(minted[0])));
});

test('?after=INDEX&limit= pages through the records, each once, next being the last index', async (t) => {
  const all = (await owner.get('/ledger?limit=200')).body.data as LedgerRecord[];
  const { records, pages } = await ledgerPages(server, owner.wid, owner.cookie, 2);
  t.deepEqual(records, all);
  for (const page of pages) t.true(page.body.data.length <= 2);
  for (const page of pages.slice(0, -1)) {
    t.is(page.body.data.length, 2);
    t.is(page.body.next, page.body.data[1].index);
  }
  t.is(pages[pages.length - 1]!.body.next, null);

  const middle = await owner.get('/ledger?after=2&limit=3');
  t.is(middle.status, 200, middle.text);
  t.deepEqual(
    middle.body.data.map((r: { index: number }) => r.index),
    [3, 4, 5],
  );
  t.deepEqual(middle.body.data, all.slice(3, 6));

  const pastEnd = await owner.get(`/ledger?after=${all.length - 1}`);
  t.deepEqual(pastEnd.body, { data: [], next: null });

  const first = await owner.get('/ledger?limit=1');
  t.deepEqual(first.body.data, [all[0]]);
  t.is(first.body.next, 0);
});

test('a malformed ?after or ?limit gives 400 invalid_request', async (t) => {
  for (const query of ['after=x', 'after=-2', 'limit=0', 'limit=201']) {
    const res = await owner.get(`/ledger?${query}`);
    assertError(t, res, 400, 'invalid_request');
    t.is(res.body.error.errors[0].field, `query.${query.split('=')[0]}`);
  }
});

test('each workspace sees only its own ledger', async (t) => {
  const theirs = await other.get('/ledger?limit=200');
  t.is(theirs.status, 200, theirs.text);
  t.true(theirs.body.data.length >= 1);
  t.deepEqual(
    theirs.body.data.map((r: { index: number }) => r.index),
    theirs.body.data.map((_: unknown, i: number) => i),
  );
  for (const r of theirs.body.data) t.is(r.workspaceId, other.wid);
  t.true(
    theirs.body.data.some(
      (r: { kind: string; data: { name?: string } }) => r.kind === 'agent.created' && r.data.name === 'their-bot',
    ),
  );

  const mine = await owner.get('/ledger?limit=200');
  t.false(mine.body.data.some((r: { workspaceId: string }) => r.workspaceId !== owner.wid));

  assertError(
    t,
    await call(server.url, 'GET', `/api/w/${other.wid}/ledger`, { headers: { cookie: owner.cookie } }),
    404,
    'not_found',
  );
});

test('the ledger needs a signed-in session', async (t) => {
  const res = await call(server.url, 'GET', owner.api('/ledger'));
  assertError(t, res, 401, 'unauthenticated');
});
