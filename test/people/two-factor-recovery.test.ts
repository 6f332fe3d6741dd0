import test from 'ava';
import { Secret, TOTP } from 'otpauth';
import { storedBytes } from '../helpers/postgres.js';
import { assertError, call, csrf, signIn } from '../helpers/http.js';
import { startServer, stopAndClean, type RunningServer } from '../helpers/process.js';
import { withStore } from '../helpers/store.js';

/**
 * What a person needs to turn two-factor on and keep their way in, and to see where they are
 * signed in, through a real server: the enrolment's QR code, ten recovery codes shown once (each
 * good once at sign-in in place of a code, replaced all together with a current code, stored
 * only as hashes), and their own sessions listed and ended from another browser. Serial: each
 * test carries on with the person the one before left.
 */

let server: RunningServer;
const person = { email: 'recovery@example.com', password: 'recovery password 1' };
let cookie: string;
let secret: string;
let codes: string[];
let fresh: string[];

test.before(async () => {
  server = await startServer({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '1000' } });
  const wid = server.boot.workspaceId!;
  await withStore(server.dataDir, (app) =>
    app.services.people.addMember({ workspaceId: wid, ...person, role: 'member' }),
  );
  cookie = await signIn(server.url, person.email, person.password);
});

test.after.always(() => stopAndClean(server));

const codeNow = (steps = 0) =>
  new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({
    timestamp: Date.now() + steps * 30_000,
  });
const send = (method: string, path: string, json?: unknown, as = cookie) =>
  call(server.url, method, path, { headers: { ...csrf, cookie: as }, ...(json === undefined ? {} : { json }) });
const signInWith = (body: Record<string, string>) =>
  call(server.url, 'POST', '/api/session', { headers: csrf, json: body });
const cookieOf = (res: { headers: Record<string, unknown> }) => {
  const set = res.headers['set-cookie'] as string | string[];
  return String(Array.isArray(set) ? set[0] : set).split(';')[0]!;
};

test.serial('enrolment answers a QR code of its URI; confirming it answers ten recovery codes once', async (t) => {
  const started = await send('POST', '/api/me/totp');
  t.is(started.status, 200, started.text);
  secret = started.body.secret;
  const svg = started.body.qrSvg as string;
  t.regex(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]* viewBox="0 0 (\d+) \1"/, 'a square SVG image');
  t.regex(svg, /<path[^>]* d="M/, 'with its modules drawn');
  t.false(svg.includes('<script'), 'an image only');

  const confirmed = await send('POST', '/api/me/totp/confirm', { code: codeNow() });
  t.is(confirmed.status, 200, confirmed.text);
  codes = confirmed.body.recoveryCodes;
  t.is(codes.length, 10);
  t.is(new Set(codes).size, 10, 'all different');
  for (const c of codes) t.regex(c, /^[a-z2-7]{5}-[a-z2-7]{5}$/);

  // The store keeps hashes only: no code in what it holds (the LMDB file, or the PostgreSQL rows).
  const raw = await storedBytes(server.dataDir);
  t.true(raw.includes(Buffer.from(person.email)), 'the scan reads the records (the email is there)');
  for (const c of codes) {
    t.false(raw.includes(Buffer.from(c)), 'not in the store file');
    t.false(raw.includes(Buffer.from(c.replace('-', ''))));
  }
});

test.serial('a recovery code signs in in place of a code, however it is typed, and only once', async (t) => {
  const typed = codes[0]!.replace('-', ' ').toUpperCase();
  const first = await signInWith({ ...person, totp: typed });
  t.is(first.status, 200, first.text);
  t.is(first.body.recoveryCodesLeft, 9, 'the person learns how many are left');
  t.truthy(first.headers['set-cookie']);

  const again = await signInWith({ ...person, totp: codes[0]! });
  assertError(t, again, 401, 'totp_required');
  t.is(again.headers['set-cookie'], undefined);

  const madeUp = await signInWith({ ...person, totp: 'aaaaa-bbbbb' });
  assertError(t, madeUp, 401, 'totp_required');
  const garbage = await signInWith({ ...person, totp: 'not a code' });
  assertError(t, garbage, 400, 'invalid_request');
});

test.serial('new recovery codes need a current code and void every old one', async (t) => {
  const without = await send('POST', '/api/me/totp/recovery-codes', {});
  assertError(t, without, 400, 'invalid_request');
  const wrong = await send('POST', '/api/me/totp/recovery-codes', {
    code: codeNow() === '000000' ? '111111' : '000000',
  });
  t.true([400, 401].includes(wrong.status), wrong.text);

  const replaced = await send('POST', '/api/me/totp/recovery-codes', { code: codeNow(1) });
  t.is(replaced.status, 200, replaced.text);
  fresh = replaced.body.recoveryCodes as string[];
  t.is(fresh.length, 10);
  t.false(fresh.some((c) => codes.includes(c)));

  assertError(t, await signInWith({ ...person, totp: codes[1]! }), 401, 'totp_required');
  const ok = await signInWith({ ...person, totp: fresh[0]! });
  t.is(ok.status, 200, ok.text);
  t.is(ok.body.recoveryCodesLeft, 9);
});

test.serial('a person sees their sessions and ends the others, never the one asking', async (t) => {
  const other = cookieOf(await signInWith({ ...person, totp: fresh[1]! }));
  const listed = await send('GET', '/api/me/sessions');
  t.is(listed.status, 200, listed.text);
  const sessions = listed.body.sessions as Array<{
    id: string;
    current: boolean;
    createdAt: string;
    expiresAt: string;
  }>;
  t.true(sessions.length >= 2, JSON.stringify(sessions));
  t.is(sessions.filter((s) => s.current).length, 1, 'one is the one asking');
  for (const s of sessions) {
    t.regex(s.id, /^ses_[\w-]{16}$/);
    t.true(Date.parse(s.expiresAt) > Date.parse(s.createdAt));
  }
  t.false(JSON.stringify(listed.body).includes(cookie.split('=')[1]!.slice(0, 12)), 'no secret shown');

  // One named session, from the other browser's view.
  const mine = sessions.find((s) => s.current)!;
  const fromOther = (await send('GET', '/api/me/sessions', undefined, other)).body.sessions as Array<{
    id: string;
    current: boolean;
  }>;
  t.false(fromOther.find((s) => s.id === mine.id)!.current);
  assertError(t, await send('DELETE', `/api/me/sessions/ses_${'0'.repeat(16)}`), 404, 'not_found');
  assertError(t, await send('DELETE', '/api/me/sessions/nope'), 400, 'invalid_request');

  const ended = await send('DELETE', '/api/me/sessions');
  t.is(ended.status, 200, ended.text);
  t.is(ended.body.sessionsEnded, sessions.length - 1);
  t.is((await call(server.url, 'GET', '/api/me', { headers: { cookie: other } })).status, 401, 'the other is out');
  t.is((await call(server.url, 'GET', '/api/me', { headers: { cookie } })).status, 200, 'this one stays');
  const left = (await send('GET', '/api/me/sessions')).body.sessions as unknown[];
  t.is(left.length, 1);
});

test.serial('with the authenticator lost, a recovery code turns two-factor off, and is spent', async (t) => {
  const code = fresh[2]!;
  const wrong = await send('DELETE', '/api/me/totp', { code: 'zzzzz-zzzzz' });
  t.true([400, 401].includes(wrong.status), wrong.text);
  t.is((await send('GET', '/api/me')).body.user.totp, true, 'a wrong code changes nothing');

  const off = await send('DELETE', '/api/me/totp', { code: code.toUpperCase() });
  t.is(off.status, 200, off.text);
  t.deepEqual(off.body, { totp: false });
  t.is((await send('GET', '/api/me')).body.user.totp, false);
  // Signing in asks for no code now; the recovery codes went with the two-factor they belonged to.
  const plain = await signInWith(person);
  t.is(plain.status, 200, plain.text);
});
