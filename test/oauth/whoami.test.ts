import test from 'ava';
import { assertError, bearer, call } from '../helpers/http.js';
import { ownedServer, serviceToken } from '../helpers/tokens.js';

/**
 * GET /v1/admin/whoami: what a service token is (its workspace, name, scopes and expiry, never its
 * value), so a pipeline can check it before it acts; `svc whoami` shows the same for a sign-in
 * (test/cli/login.test.ts). Other credentials are refused.
 */
const served = ownedServer(test);

test('a service token is told its workspace, name, scopes and expiry, never its value', async (t) => {
  const token = await serviceToken(served.owner, 'whoami-ci', ['agents:read', 'evidence:read'], 7);
  const res = await call(served.server.url, 'GET', '/v1/admin/whoami', { headers: bearer(token) });
  t.is(res.status, 200, res.text);
  t.like(res.body, {
    kind: 'service-token',
    workspace: { id: served.owner.wid },
    token: { name: 'whoami-ci', scopes: ['agents:read', 'evidence:read'] },
  });
  t.regex(res.body.token.id, /^tok_/);
  const days = (Date.parse(res.body.token.expiresAt) - Date.now()) / 86_400_000;
  t.true(days > 6.9 && days <= 7, String(days));
  t.false(res.text.includes(token), 'the value is never answered');
});

test('no credential, an agent key or a workspace key: 401', async (t) => {
  assertError(t, await call(served.server.url, 'GET', '/v1/admin/whoami'), 401, 'unauthenticated');
  const key = await served.owner.send('POST', '/keys', { scope: 'admin', name: 'whoami-admin' });
  t.is(key.status, 201, key.text);
  assertError(
    t,
    await call(served.server.url, 'GET', '/v1/admin/whoami', { headers: bearer(key.body.key) }),
    401,
    'unauthenticated',
  );
});
