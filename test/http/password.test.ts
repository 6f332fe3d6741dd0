import test from 'ava';
import { assertError, call, csrf, signIn } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/** The first start's one-time password, and changing it (PUT /api/me/password). */
let server: ServedInProcess;

test.before(async () => {
  // This file signs in and changes passwords many times from one address.
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '100' } });
});

test.after.always(() => stopAndClean(server));

const change = (cookie: string, body: unknown) =>
  call(server.url, 'PUT', '/api/me/password', { headers: { ...csrf, cookie }, json: body });

test.serial('until the one-time password is changed, no workspace permission holds', async (t) => {
  const owner = server.boot.owner!;
  const cookie = await signIn(server.url, owner.email, owner.password);
  const wid = server.boot.workspaceId!;
  const list = await call(server.url, 'GET', `/api/w/${wid}/keys`, { headers: { cookie } });
  assertError(t, list, 403, 'forbidden');
  t.regex(list.body.error.fix, /PUT \/api\/me\/password/);
  assertError(
    t,
    await call(server.url, 'POST', `/api/w/${wid}/keys`, { headers: { ...csrf, cookie }, json: { scope: 'admin' } }),
    403,
    'forbidden',
  );
  t.is(
    (await call(server.url, 'GET', '/api/me', { headers: { cookie } })).status,
    200,
    'the person can still see who they are',
  );
});

test.serial(
  'the bootstrap owner is told to change the one-time password, and a bad change is refused by field',
  async (t) => {
    const owner = server.boot.owner!;
    const signedIn = await call(server.url, 'POST', '/api/session', {
      headers: csrf,
      json: { email: owner.email, password: owner.password },
    });
    t.is(signedIn.body.user.mustChangePassword, true);
    const cookie = await signIn(server.url, owner.email, owner.password);
    t.is((await call(server.url, 'GET', '/api/me', { headers: { cookie } })).body.user.mustChangePassword, true);

    const wrong = await change(cookie, { currentPassword: 'not it at all', newPassword: 'a brand new passphrase' });
    assertError(t, wrong, 400, 'invalid_request');
    t.deepEqual(
      wrong.body.error.errors.map((e: { field: string }) => e.field),
      ['currentPassword'],
    );

    const short = await change(cookie, { currentPassword: owner.password, newPassword: 'short' });
    assertError(t, short, 400, 'invalid_request');
    t.deepEqual(
      short.body.error.errors.map((e: { field: string }) => e.field),
      ['newPassword'],
    );

    const same = await change(cookie, { currentPassword: owner.password, newPassword: owner.password });
    assertError(t, same, 400, 'invalid_request');
    t.deepEqual(
      same.body.error.errors.map((e: { field: string }) => e.field),
      ['newPassword'],
    );

    const noCsrf = await call(server.url, 'PUT', '/api/me/password', {
      headers: { cookie },
      json: { currentPassword: owner.password, newPassword: 'a brand new passphrase' },
    });
    assertError(t, noCsrf, 403, 'csrf');

    // Nothing above changed the password.
    t.is((await call(server.url, 'GET', '/api/me', { headers: { cookie } })).status, 200);
    await t.notThrowsAsync(signIn(server.url, owner.email, owner.password));
  },
);

test.serial(
  'a change ends every session of the person, this one too, hands back a fresh one, and the old password stops working',
  async (t) => {
    const owner = server.boot.owner!;
    const changing = await signIn(server.url, owner.email, owner.password);
    const other = await signIn(server.url, owner.email, owner.password);
    const newPassword = 'correct horse battery staple 42';

    const res = await change(changing, { currentPassword: owner.password, newPassword });
    t.is(res.status, 200, res.text);
    // The earlier tests signed in four times; with `changing` and `other`, six sessions ended.
    t.is(res.body.sessionsEnded, 6);
    const setCookie = [res.headers['set-cookie']].flat().find((c) => String(c).startsWith('sid='));
    t.truthy(setCookie, 'a fresh session cookie comes back');
    const fresh = String(setCookie).split(';')[0]!;
    t.not(fresh, changing);

    t.is((await call(server.url, 'GET', '/api/me', { headers: { cookie: other } })).status, 401);
    t.is(
      (await call(server.url, 'GET', '/api/me', { headers: { cookie: changing } })).status,
      401,
      'a stolen copy of the changing session does not survive',
    );
    const me = await call(server.url, 'GET', '/api/me', { headers: { cookie: fresh } });
    t.is(me.status, 200);
    t.false(me.body.user.mustChangePassword);

    const old = await call(server.url, 'POST', '/api/session', {
      headers: csrf,
      json: { email: owner.email, password: owner.password },
    });
    assertError(t, old, 401, 'unauthenticated');
    await t.notThrowsAsync(signIn(server.url, owner.email, newPassword));
  },
);
