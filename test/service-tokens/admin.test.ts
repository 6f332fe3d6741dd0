import test from 'ava';
import type { AppError } from '../../src/errors/app-error.js';
import { addressAllowed } from '../../src/service-tokens/index.js';
import { bearer, call, assertError } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { fixedClock, withStore } from '../helpers/store.js';

/** service tokens on GET /v1/admin/agents (scope agents:read). */

let server: ServedInProcess;
let wid: string;
const tokens: Record<string, string> = {};
const agentIds: string[] = [];
let removedAgentId: string;

test.before(async () => {
  server = await serveInProcess();
  wid = server.boot.workspaceId!;
  await withStore(server.dataDir, async (app) => {
    const { agents, serviceTokens } = app.services;
    for (const name of ['alpha', 'beta', 'gamma']) {
      agentIds.push((await agents.create({ workspaceId: wid, name, tags: [`team-${name}`] })).id);
    }
    const removed = await agents.create({ workspaceId: wid, name: 'removed' });
    await agents.remove(wid, removed.id);
    removedAgentId = removed.id;
    const make = async (key: string, input: { scopes?: string[]; ipAllow?: string[] }) => {
      const created = await serviceTokens.create(wid, {
        name: key,
        scopes: (input.scopes ?? ['agents:read']) as never,
        expiresInDays: 30,
        ...(input.ipAllow ? { ipAllow: input.ipAllow } : {}),
      });
      tokens[key] = created.token;
      return created;
    };
    await make('reader', {});
    await make('freezer', { scopes: ['agents:freeze', 'evidence:read'] });
    const revoked = await make('revoked', {});
    await serviceTokens.revoke(wid, revoked.id);
    await make('pinned-elsewhere', { ipAllow: ['10.0.0.0/8'] });
    await make('pinned-loopback', { ipAllow: ['127.0.0.0/8'] });
    await make('pinned-mixed', { ipAllow: ['::1/128', '127.0.0.1/32'] });
  });
  // Created ten days ago with a one-day life: already expired for the server's clock.
  await withStore(
    server.dataDir,
    async (app) => {
      tokens.expired = (
        await app.services.serviceTokens.create(wid, { name: 'expired', scopes: ['agents:read'], expiresInDays: 1 })
      ).token;
      tokens.expiredElsewhere = (
        await app.services.serviceTokens.create(wid, {
          name: 'expired-elsewhere',
          scopes: ['agents:read'],
          expiresInDays: 1,
          ipAllow: ['10.0.0.0/8'],
        })
      ).token;
    },
    { clock: fixedClock(Date.now() - 10 * 86_400_000) },
  );
});

test.after.always(() => stopAndClean(server));

test('a valid token with agents:read lists the workspace agents as { data, next }', async (t) => {
  const res = await call(server.url, 'GET', '/v1/admin/agents', { headers: bearer(tokens.reader!) });
  t.is(res.status, 200, res.text);
  t.deepEqual(Object.keys(res.body).sort(), ['data', 'next']);
  t.is(res.body.next, null);
  const ids = (res.body.data as Array<{ id: string }>).map((a) => a.id).sort();
  t.deepEqual(ids, [...agentIds].sort());
  t.false(ids.includes(removedAgentId), 'removed agents are not listed');
  const alpha = res.body.data.find((a: { name: string }) => a.name === 'alpha');
  t.like(alpha, { name: 'alpha', tags: ['team-alpha'], status: 'running', holds: [] });
  t.regex(alpha.id, /^agt_[0-9A-Za-z]{22}$/);
  t.regex(alpha.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
});

test('the list filters by tag', async (t) => {
  const res = await call(server.url, 'GET', '/v1/admin/agents?tag=team-beta', { headers: bearer(tokens.reader!) });
  t.is(res.status, 200);
  t.deepEqual(
    res.body.data.map((a: { name: string }) => a.name),
    ['beta'],
  );
});

test('a token without agents:read gives 403 missing_scope naming the scope', async (t) => {
  const res = await call(server.url, 'GET', '/v1/admin/agents', { headers: bearer(tokens.freezer!) });
  assertError(t, res, 403, 'missing_scope');
  t.regex(res.body.error.message, /agents:read/);
});

test('an expired token gives 401 token_expired', async (t) => {
  const res = await call(server.url, 'GET', '/v1/admin/agents', { headers: bearer(tokens.expired!) });
  assertError(t, res, 401, 'token_expired');
});

test('a revoked token gives 401 invalid_token', async (t) => {
  const res = await call(server.url, 'GET', '/v1/admin/agents', { headers: bearer(tokens.revoked!) });
  assertError(t, res, 401, 'invalid_token');
});

test('an unknown token gives 401 invalid_token', async (t) => {
  const res = await call(server.url, 'GET', '/v1/admin/agents', { headers: bearer(`ims_${'x'.repeat(43)}`) });
  assertError(t, res, 401, 'invalid_token');
});

test('a token pinned to 10.0.0.0/8 used from 127.0.0.1 gives 401 invalid_token', async (t) => {
  const res = await call(server.url, 'GET', '/v1/admin/agents', { headers: bearer(tokens['pinned-elsewhere']!) });
  assertError(t, res, 401, 'invalid_token');
});

test('x-forwarded-for is not believed without trusted proxies: a forged 10.x address does not unlock a pinned token', async (t) => {
  const res = await call(server.url, 'GET', '/v1/admin/agents', {
    headers: { ...bearer(tokens['pinned-elsewhere']!), 'x-forwarded-for': '10.1.2.3' },
  });
  assertError(t, res, 401, 'invalid_token');
});

test('a token pinned to 127.0.0.0/8 is accepted from 127.0.0.1', async (t) => {
  const res = await call(server.url, 'GET', '/v1/admin/agents', { headers: bearer(tokens['pinned-loopback']!) });
  t.is(res.status, 200, res.text);
  t.is(res.body.data.length, agentIds.length);
});

test('a token pinned to [::1/128, 127.0.0.1/32] is accepted from 127.0.0.1', async (t) => {
  const res = await call(server.url, 'GET', '/v1/admin/agents', { headers: bearer(tokens['pinned-mixed']!) });
  t.is(res.status, 200, res.text);
});

// addressAllowed: the ipAllow matcher

test('addressAllowed: IPv4 addresses against IPv4 ranges', (t) => {
  t.true(addressAllowed('10.1.2.3', ['10.0.0.0/8']));
  t.true(addressAllowed('192.168.1.77', ['172.16.0.0/12', '192.168.1.0/24']));
  t.true(addressAllowed('127.0.0.1', ['127.0.0.1/32']));
  t.true(addressAllowed('127.0.0.1', ['127.0.0.1']), 'a bare address is a /32');
  t.false(addressAllowed('11.0.0.1', ['10.0.0.0/8']));
  t.false(addressAllowed('192.168.2.1', ['192.168.1.0/24']));
});

test('addressAllowed: IPv6 addresses against IPv6 ranges', (t) => {
  t.true(addressAllowed('2001:db8::1', ['2001:db8::/32']));
  t.true(addressAllowed('::1', ['::1/128']));
  t.true(
    addressAllowed('2001:0db8:0000:0000:0000:0000:0000:0042', ['2001:db8::42/128']),
    'any spelling of the address',
  );
  t.false(addressAllowed('2001:db9::1', ['2001:db8::/32']));
  t.false(addressAllowed('::2', ['::1/128']));
});

test('addressAllowed: families never match each other', (t) => {
  t.false(addressAllowed('::1', ['127.0.0.0/8']));
  t.false(addressAllowed('127.0.0.1', ['::1/128']));
  t.false(addressAllowed('2001:db8::1', ['0.0.0.0/0']));
});

test('addressAllowed: an IPv4-mapped IPv6 address matches IPv4 ranges', (t) => {
  t.true(addressAllowed('::ffff:127.0.0.1', ['127.0.0.0/8']));
  t.true(addressAllowed('::ffff:10.9.8.7', ['10.0.0.0/8']));
  t.false(addressAllowed('::ffff:11.0.0.1', ['10.0.0.0/8']));
});

test('addressAllowed: a garbage address is never allowed', (t) => {
  for (const address of [
    '',
    'not-an-ip',
    '999.1.1.1',
    '1.2.3.4.5',
    '127.0.0.1/8',
    '::ffff:300.1.1.1',
    'fe80::1::2',
    '10.0.0',
    '0x7f.1',
    '2130706433',
  ]) {
    t.false(addressAllowed(address, ['0.0.0.0/0', '::/0', '10.0.0.0/8']), address);
  }
});

test('addressAllowed: no ranges means no pinning', (t) => {
  t.true(addressAllowed('10.1.2.3', []));
  t.true(addressAllowed('2001:db8::1', []));
});

test('an expired token used from outside its ipAllow is just invalid: the answer does not say the token is real', async (t) => {
  const res = await call(server.url, 'GET', '/v1/admin/agents', { headers: bearer(tokens.expiredElsewhere!) });
  assertError(t, res, 401, 'invalid_token');
});

test.serial('a token revoked by another process while the server runs is refused on its very next use', async (t) => {
  let id = '';
  await withStore(server.dataDir, async (app) => {
    const created = await app.services.serviceTokens.create(wid, {
      name: 'short-lived',
      scopes: ['agents:read'],
      expiresInDays: 1,
    });
    tokens.shortLived = created.token;
    id = created.id;
  });
  const before = await call(server.url, 'GET', '/v1/admin/agents', { headers: bearer(tokens.shortLived!) });
  t.is(before.status, 200, 'the server has used the token');
  await withStore(server.dataDir, (app) => app.services.serviceTokens.revoke(wid, id));
  const after = await call(server.url, 'GET', '/v1/admin/agents', { headers: bearer(tokens.shortLived!) });
  assertError(t, after, 401, 'invalid_token');
});

test.serial('every token expires: a lifetime outside 1 to 90 days is refused, naming the field', async (t) => {
  await withStore(server.dataDir, async (app) => {
    for (const expiresInDays of [0, 91, 1.5, -3]) {
      const err = await t.throwsAsync(
        app.services.serviceTokens.create(wid, { name: 'x', scopes: ['agents:read'], expiresInDays }),
      );
      t.deepEqual(
        (err as AppError).details.errors?.map((e) => e.field),
        ['expiresInDays'],
        String(expiresInDays),
      );
    }
    const longest = await app.services.serviceTokens.create(wid, {
      name: 'longest',
      scopes: ['agents:read'],
      expiresInDays: 90,
    });
    t.is(Date.parse(longest.expiresAt) - Date.parse(longest.createdAt), 90 * 86_400_000);
  });
});
