import test from 'ava';
import { ownerConsole, type Person } from '../helpers/console.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { stopAndClean } from '../helpers/process.js';
import { serviceToken } from '../helpers/tokens.js';

/**
 * GET /v1/admin/whoami: what a service token is (its workspace, name, scopes and expiry, never its
 * value), so a pipeline can check it before it acts; `svc whoami` shows the same for a sign-in
 * (test/cli/login.test.ts). Other credentials are refused.
 */
let server: ServedInProcess;
let owner: Person;

test.before(async () => {
  server = await serveInProcess();
  owner = await ownerConsole(server);
});

test.after.always(() => stopAndClean(server));

test('a service token is told its workspace, name, scopes and expiry, never its value', async (t) => {
  const token = await serviceToken(owner, 'whoami-ci', ['agents:read', 'evidence:read'], 7);
  const res = await call(server.url, 'GET', '/v1/admin/whoami', { headers: bearer(token) });
  t.is(res.status, 200, res.text);
  t.like(res.body, {
    kind: 'service-token',
    workspace: { id: owner.wid },
    token: { name: 'whoami-ci', scopes: ['agents:read', 'evidence:read'] },
  });
  t.regex(res.body.token.id, /^tok_/);
  const days = (Date.parse(res.body.token.expiresAt) - Date.now()) / 86_400_000;
  t.true(days > 6.9 && days <= 7, String(days));
  t.false(res.text.includes(token), 'the value is never answered');
});

test('no credential, an agent key or a workspace key: 401', async (t) => {
  assertError(t, await call(server.url, 'GET', '/v1/admin/whoami'), 401, 'unauthenticated');
  const key = await owner.send('POST', '/keys', { scope: 'admin', name: 'whoami-admin' });
  t.is(key.status, 201, key.text);
  assertError(
    t,
    await call(server.url, 'GET', '/v1/admin/whoami', { headers: bearer(key.body.key) }),
    401,
    'unauthenticated',
  );
});
