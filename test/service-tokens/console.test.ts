import test from 'ava';
import { ownerConsole, type Person } from '../helpers/console.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { addPerson, SERVER_ENV } from '../approvals/support.js';

/**
 * Service tokens in the console: owners create them (the value shown
 * once), list them (never the value or its hash) and revoke them; every token expires within 90
 * days; ipAllow pins it to address ranges; creation and revocation are ledger records.
 */
let server: ServedInProcess;
let owner: Person;
let admin: Person;

test.before(async () => {
  server = await serveInProcess({ env: SERVER_ENV });
  owner = await ownerConsole(server);
  admin = await addPerson(server, owner.wid, 'admin@acme.example', 'admin');
});

test.after.always(() => stopAndClean(server));

test.serial(
  'an owner creates a token (shown once), it works on its scope, is listed without its value, and revoking it ends it',
  async (t) => {
    const res = await owner.send('POST', '/service-tokens', {
      name: 'ci-fleet',
      scopes: ['agents:read'],
      expiresInDays: 30,
    });
    t.is(res.status, 201, res.text);
    t.regex(res.body.token, /^ims_[A-Za-z0-9_-]{43}$/);
    t.regex(res.body.id, /^tok_[0-9A-Za-z]{22}$/);
    t.like(res.body, { name: 'ci-fleet', scopes: ['agents:read'], ipAllow: [] });
    const days = (Date.parse(res.body.expiresAt) - Date.now()) / 86_400_000;
    t.true(days > 29.9 && days <= 30, String(days));

    t.is((await call(server.url, 'GET', '/v1/admin/agents', { headers: bearer(res.body.token) })).status, 200);
    const list = await owner.get('/service-tokens');
    t.is(list.status, 200);
    t.true(list.body.data.some((x: { id: string }) => x.id === res.body.id));
    t.false(list.text.includes(res.body.token));
    t.false(list.text.includes('"hash"'));

    t.deepEqual((await owner.send('DELETE', `/service-tokens/${res.body.id}`)).body, {});
    assertError(
      t,
      await call(server.url, 'GET', '/v1/admin/agents', { headers: bearer(res.body.token) }),
      401,
      'invalid_token',
    );
    assertError(t, await owner.send('DELETE', `/service-tokens/${res.body.id}`), 404, 'not_found');

    const ledger = await owner.ledger();
    const kinds = ledger.filter((r) => r.subject === res.body.id).map((r) => [r.kind, r.actor]);
    t.deepEqual(kinds, [
      ['service_token.created', `user:${owner.id}`],
      ['service_token.revoked', `user:${owner.id}`],
    ]);
    t.false(JSON.stringify(ledger).includes(res.body.token));
  },
);

test.serial('a token pinned to other addresses is refused from this one: 401 invalid_token', async (t) => {
  const res = await owner.send('POST', '/service-tokens', {
    name: 'pinned',
    scopes: ['agents:read'],
    expiresInDays: 1,
    ipAllow: ['10.0.0.0/8', '2001:db8::/32'],
  });
  t.is(res.status, 201, res.text);
  assertError(
    t,
    await call(server.url, 'GET', '/v1/admin/agents', { headers: bearer(res.body.token) }),
    401,
    'invalid_token',
  );
});

test('only owners manage service tokens: an admin gets 403 forbidden', async (t) => {
  assertError(t, await admin.get('/service-tokens'), 403, 'forbidden');
  assertError(
    t,
    await admin.send('POST', '/service-tokens', { name: 'x', scopes: ['agents:read'], expiresInDays: 1 }),
    403,
    'forbidden',
  );
});

test('bad bodies are 400 invalid_request naming each field', async (t) => {
  const res = await owner.send('POST', '/service-tokens', {
    name: 'two words',
    scopes: ['agents:approve'],
    expiresInDays: 91,
    ipAllow: ['not-an-address'],
  });
  assertError(t, res, 400, 'invalid_request');
  t.deepEqual(res.body.error.errors.map((e: { field: string }) => e.field).sort(), [
    'expiresInDays',
    'ipAllow.0',
    'name',
    'scopes.0',
  ]);
  const none = await owner.send('POST', '/service-tokens', { name: 'x', scopes: [], expiresInDays: 1 });
  assertError(t, none, 400, 'invalid_request');
});
