import test from 'ava';
import { storedBytes } from '../helpers/postgres.js';
import { Secret, TOTP, URI } from 'otpauth';
import { assertError, call, csrf, signIn, type Reply } from '../helpers/http.js';
import { startServer, stopAndClean, type RunningServer } from '../helpers/process.js';
import { withStore } from '../helpers/store.js';

/**
 * Two-factor sign-in (TOTP per RFC 6238) through a real server: enrol, confirm,
 * `401 totp_required` at sign-in, one use per code, turning it off with a code, and the secret
 * never in the store file. Codes are computed here with the otpauth library from the secret the
 * enrolment answered. Serial: each test carries on with the person the one before left.
 */

let server: RunningServer;
let wid: string;
const person = { email: 'two-factor@example.com', password: 'two-factor password 1' };
let cookie: string;
let secret: string;

test.before(async () => {
  server = await startServer({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '1000' } });
  wid = server.boot.workspaceId!;
  await withStore(server.dataDir, (app) =>
    app.services.people.addMember({ workspaceId: wid, ...person, role: 'member' }),
  );
  cookie = await signIn(server.url, person.email, person.password);
});

test.after.always(() => stopAndClean(server));

const totpOf = (base32: string) =>
  new TOTP({ secret: Secret.fromBase32(base32), algorithm: 'SHA1', digits: 6, period: 30 });
/** The code for the time step `steps` away from now. */
const codeAt = (base32: string, steps = 0) => totpOf(base32).generate({ timestamp: Date.now() + steps * 30_000 });
/** A six-digit code that is none of the secret's codes near now. */
function wrongCode(base32: string): string {
  const near = new Set([-2, -1, 0, 1, 2].map((s) => codeAt(base32, s)));
  for (let n = 0; ; n += 1) {
    const candidate = String((123456 + n * 7919) % 1_000_000).padStart(6, '0');
    if (!near.has(candidate)) return candidate;
  }
}

const me = () => call(server.url, 'GET', '/api/me', { headers: { cookie } });
const send = (method: string, path: string, json?: unknown, as = cookie) =>
  call(server.url, method, path, { headers: { ...csrf, cookie: as }, ...(json === undefined ? {} : { json }) });
const signInWith = (body: Record<string, string>) =>
  call(server.url, 'POST', '/api/session', { headers: csrf, json: body });
const setsCookie = (res: Reply) => res.headers['set-cookie'] !== undefined;

test.serial('two-factor is off until enrolled; enrolment answers the secret and its otpauth URI once', async (t) => {
  const before = await me();
  t.is(before.status, 200);
  t.is(before.body.user.totp, false);

  const res = await send('POST', '/api/me/totp');
  t.is(res.status, 200, res.text);
  t.deepEqual(Object.keys(res.body).sort(), ['otpauthUri', 'qrSvg', 'secret']);
  t.regex(res.body.secret, /^[A-Z2-7]{32}$/, '160 bits in base32');
  const parsed = URI.parse(res.body.otpauthUri);
  t.true(parsed instanceof TOTP);
  t.like(parsed, { issuer: 'svc', label: person.email, algorithm: 'SHA1', digits: 6, period: 30 });
  t.is(parsed.secret.base32, res.body.secret);
  secret = res.body.secret;

  // Not on before a code confirms it: sign-in asks for no code yet.
  t.is((await me()).body.user.totp, false);
  const plain = await signInWith(person);
  t.is(plain.status, 200, plain.text);
  t.is(plain.body.user.totp, false);
});

test.serial('confirming: a wrong or malformed code is 400 naming code; the current code turns it on', async (t) => {
  const wrong = await send('POST', '/api/me/totp/confirm', { code: wrongCode(secret) });
  assertError(t, wrong, 400, 'invalid_request');
  t.deepEqual(wrong.body.error.errors, [
    { field: 'code', message: '"code" is not the current code of your authenticator' },
  ]);

  const malformed = await send('POST', '/api/me/totp/confirm', { code: '12ab' });
  assertError(t, malformed, 400, 'invalid_request');
  t.deepEqual(malformed.body.error.errors, [
    { field: 'code', message: '"code" must be the 6 digits your authenticator shows' },
  ]);
  t.is((await me()).body.user.totp, false);

  const right = await send('POST', '/api/me/totp/confirm', { code: codeAt(secret) });
  t.is(right.status, 200, right.text);
  t.is(right.body.totp, true);
  t.is(right.body.recoveryCodes.length, 10, 'recovery codes, shown this once');
  const after = await me();
  t.is(after.status, 200);
  t.is(after.body.user.totp, true);

  const again = await send('POST', '/api/me/totp');
  assertError(t, again, 400, 'invalid_request');
  t.deepEqual(again.body.error.errors, [
    { field: null, message: 'two-factor is already on: turn it off first (DELETE /api/me/totp with a code)' },
  ]);
});

test.serial('with two-factor on, sign-in without a code or with a wrong one is 401 totp_required', async (t) => {
  const none = await signInWith(person);
  assertError(t, none, 401, 'totp_required');
  t.is(none.body.error.message, 'This account needs a two-factor code: send it as totp.');
  t.false(setsCookie(none));

  const wrong = await signInWith({ ...person, totp: wrongCode(secret) });
  assertError(t, wrong, 401, 'totp_required');
  t.is(wrong.body.error.message, 'The two-factor code is wrong, or was used already.');
  t.false(setsCookie(wrong));

  const malformed = await signInWith({ ...person, totp: 'abcdef' });
  assertError(t, malformed, 400, 'invalid_request');
  t.is(malformed.body.error.errors[0].field, 'totp');
});

test.serial('a wrong password with two-factor on is the same 401 unauthenticated as an unknown email', async (t) => {
  const wrongPassword = await signInWith({
    email: person.email,
    password: `${person.password}x`,
    totp: codeAt(secret, 1),
  });
  const unknown = await signInWith({ email: 'nobody@example.com', password: person.password, totp: codeAt(secret, 1) });
  for (const res of [wrongPassword, unknown]) {
    assertError(t, res, 401, 'unauthenticated');
    t.false(setsCookie(res));
  }
  t.is(wrongPassword.body.error.message, unknown.body.error.message);
  t.is(wrongPassword.body.error.fix, unknown.body.error.fix);
});

test.serial('the right code signs in once; the same code again is 401 totp_required', async (t) => {
  // The confirming code spent the current step: the next step's code is fresh (drift of one step).
  const code = codeAt(secret, 1);
  const ok = await signInWith({ ...person, totp: code });
  t.is(ok.status, 200, ok.text);
  t.like(ok.body.user, { email: person.email, totp: true });
  t.deepEqual(ok.body.workspaces, [{ id: wid, name: 'Default', role: 'member' }]);
  t.true(setsCookie(ok));
  const fresh = String(ok.headers['set-cookie']).split(';')[0]!;
  t.is((await call(server.url, 'GET', '/api/me', { headers: { cookie: fresh } })).status, 200);

  const replay = await signInWith({ ...person, totp: code });
  assertError(t, replay, 401, 'totp_required');
  t.false(setsCookie(replay));
  const older = await signInWith({ ...person, totp: codeAt(secret, 0) });
  assertError(t, older, 401, 'totp_required');
});

test.serial('turning two-factor off needs a current, unused code', async (t) => {
  // A second person, so that no code of the sign-in above is in the way.
  const other = { email: 'two-factor-off@example.com', password: 'two-factor off password' };
  await withStore(server.dataDir, (app) =>
    app.services.people.addMember({ workspaceId: wid, ...other, role: 'analyst' }),
  );
  const theirs = await signIn(server.url, other.email, other.password);
  const enrolled = await send('POST', '/api/me/totp', undefined, theirs);
  t.is(enrolled.status, 200, enrolled.text);
  const base32 = enrolled.body.secret as string;
  const confirmCode = codeAt(base32);
  t.is((await send('POST', '/api/me/totp/confirm', { code: confirmCode }, theirs)).body.totp, true);

  const missing = await send('DELETE', '/api/me/totp', {}, theirs);
  assertError(t, missing, 400, 'invalid_request');
  t.is(missing.body.error.errors[0].field, 'code');
  const wrong = await send('DELETE', '/api/me/totp', { code: wrongCode(base32) }, theirs);
  assertError(t, wrong, 400, 'invalid_request');
  t.deepEqual(wrong.body.error.errors, [
    { field: 'code', message: '"code" is not the current code of your authenticator' },
  ]);
  const spent = await send('DELETE', '/api/me/totp', { code: confirmCode }, theirs);
  assertError(t, spent, 400, 'invalid_request');
  t.is(spent.body.error.errors[0].field, 'code');
  t.is((await call(server.url, 'GET', '/api/me', { headers: { cookie: theirs } })).body.user.totp, true);

  const off = await send('DELETE', '/api/me/totp', { code: codeAt(base32, 1) }, theirs);
  t.is(off.status, 200, off.text);
  t.deepEqual(off.body, { totp: false });
  t.is((await call(server.url, 'GET', '/api/me', { headers: { cookie: theirs } })).body.user.totp, false);
  const plain = await signInWith(other);
  t.is(plain.status, 200, plain.text);
  t.is(plain.body.user.totp, false);

  const notOn = await send('DELETE', '/api/me/totp', { code: codeAt(base32, 1) }, theirs);
  assertError(t, notOn, 400, 'invalid_request');
  t.deepEqual(notOn.body.error.errors, [{ field: null, message: 'two-factor is not on' }]);
});

test.serial('the two-factor routes need a session and the CSRF header', async (t) => {
  assertError(t, await call(server.url, 'POST', '/api/me/totp', { headers: csrf }), 401, 'unauthenticated');
  assertError(t, await call(server.url, 'POST', '/api/me/totp', { headers: { cookie } }), 403, 'csrf');
  assertError(
    t,
    await call(server.url, 'DELETE', '/api/me/totp', { headers: { cookie }, json: { code: '123456' } }),
    403,
    'csrf',
  );
  t.is((await me()).body.user.totp, true);
});

test.serial('the secret is in the store file neither in clear nor in base32', async (t) => {
  t.is(await server.stop(), 0);
  // What the store holds, as stored: the LMDB file, or every value of the PostgreSQL table.
  const file = await storedBytes(server.dataDir);
  t.true(file.length > 0);
  const raw = Buffer.from(Secret.fromBase32(secret).bytes);
  t.is(file.indexOf(raw), -1, 'raw secret bytes');
  t.is(file.indexOf(Buffer.from(secret, 'latin1')), -1, 'base32');
  t.is(file.indexOf(Buffer.from(raw.toString('hex'), 'latin1')), -1, 'hex');
  t.is(file.indexOf(Buffer.from(raw.toString('base64url'), 'latin1')), -1, 'base64url');
  t.is(file.indexOf(Buffer.from(person.email, 'latin1')) >= 0, true, 'the scan reads the records (the email is there)');
});
