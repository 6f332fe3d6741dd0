import test from 'ava';
import { createApp, type App } from '../../src/app.js';
import { createHttpServer, type HttpServer } from '../../src/server.js';
import { createLogger } from '../../src/lib/log.js';
import { loadSettings } from '../../src/settings/load.js';
import { call, csrf, signIn } from '../helpers/http.js';
import { removeDir, tempDir, stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { withStore } from '../helpers/store.js';
import { StoreError } from '../../src/store/index.js';

/** Sign-in, the session cookie and CSRF. */

let server: ServedInProcess;
let wid: string;
let email: string;
let password: string;
const dirs: string[] = [];

test.before(async () => {
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '1000' } });
  wid = server.boot.workspaceId!;
  email = server.boot.owner!.email;
  password = server.boot.owner!.password;
  // The first-start owner may not act in the workspace before replacing the one-time password;
  // workspace writes below use a second owner, so every test here can keep signing in as the first.
  await withStore(server.dataDir, (app) =>
    app.services.people.addMember({ workspaceId: wid, ...SECOND_OWNER, role: 'owner' }),
  );
});

const SECOND_OWNER = { email: 'second-owner@example.com', password: 'second owner password 1' };
const writerSession = () => signIn(server.url, SECOND_OWNER.email, SECOND_OWNER.password);

test.after.always(async () => {
  await stopAndClean(server);
  for (const dir of dirs) await removeDir(dir);
});

function setCookies(headers: Record<string, string | string[] | undefined>): string[] {
  const value = headers['set-cookie'];
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

/** The attributes of a Set-Cookie line, lower-cased names: { name, value, attrs }. */
function parseSetCookie(line: string): { name: string; value: string; attrs: Map<string, string> } {
  const [pair, ...rest] = line.split(';').map((s) => s.trim());
  const eq = pair!.indexOf('=');
  const attrs = new Map<string, string>();
  for (const part of rest) {
    const i = part.indexOf('=');
    attrs.set((i < 0 ? part : part.slice(0, i)).toLowerCase(), i < 0 ? '' : part.slice(i + 1));
  }
  return { name: pair!.slice(0, eq), value: pair!.slice(eq + 1), attrs };
}

test('signing in as the owner answers { user, workspaces } and sets an HttpOnly, Lax sid cookie (no Secure on http)', async (t) => {
  const res = await call(server.url, 'POST', '/api/session', { headers: csrf, json: { email, password } });
  t.is(res.status, 200, res.text);
  t.deepEqual(Object.keys(res.body).sort(), ['user', 'workspaces']);
  t.is(res.body.user.email, email);
  t.regex(res.body.user.id, /^usr_[0-9A-Za-z]{22}$/);
  t.is(typeof res.body.user.name, 'string');
  t.false('passwordHash' in res.body.user);
  t.deepEqual(res.body.workspaces, [{ id: wid, name: 'Default', role: 'owner' }]);

  const cookies = setCookies(res.headers).map(parseSetCookie);
  t.is(cookies.length, 1);
  const sid = cookies[0]!;
  t.is(sid.name, 'sid');
  t.true(sid.value.length > 0);
  t.true(sid.attrs.has('httponly'));
  t.is(sid.attrs.get('samesite'), 'Lax');
  t.is(sid.attrs.get('path'), '/');
  t.false(sid.attrs.has('secure'));
  t.false(sid.attrs.has('domain'));
  t.false(res.text.includes(sid.value), 'the session secret is not in the body');
});

test('GET /api/me answers the signed-in person and their workspaces', async (t) => {
  const cookie = await signIn(server.url, email, password);
  const res = await call(server.url, 'GET', '/api/me', { headers: { cookie } });
  t.is(res.status, 200, res.text);
  t.is(res.body.user.email, email);
  t.deepEqual(Object.keys(res.body.user).sort(), ['email', 'id', 'mustChangePassword', 'name', 'totp']);
  t.is(res.body.user.mustChangePassword, true, "the first start's one-time password is still in use");
  t.deepEqual(res.body.workspaces, [{ id: wid, name: 'Default', role: 'owner' }]);
});

test('a wrong password and an unknown email give the same 401 unauthenticated', async (t) => {
  const wrongPassword = await call(server.url, 'POST', '/api/session', {
    headers: csrf,
    json: { email, password: `${password}x` },
  });
  const unknownEmail = await call(server.url, 'POST', '/api/session', {
    headers: csrf,
    json: { email: 'nobody@example.com', password },
  });
  for (const res of [wrongPassword, unknownEmail]) {
    t.is(res.status, 401);
    t.is(res.body.error.type, 'unauthenticated');
    t.deepEqual(setCookies(res.headers), []);
  }
  t.is(wrongPassword.body.error.message, unknownEmail.body.error.message);
  t.is(wrongPassword.body.error.fix, unknownEmail.body.error.fix);
});

test('DELETE /api/session answers {} and the old cookie is refused from then on', async (t) => {
  const cookie = await signIn(server.url, email, password);
  t.is((await call(server.url, 'GET', '/api/me', { headers: { cookie } })).status, 200);
  const out = await call(server.url, 'DELETE', '/api/session', { headers: { cookie, ...csrf } });
  t.is(out.status, 200, out.text);
  t.deepEqual(out.body, {});
  const again = await call(server.url, 'GET', '/api/me', { headers: { cookie } });
  t.is(again.status, 401);
  t.is(again.body.error.type, 'unauthenticated');
});

test('signing out ends only that session', async (t) => {
  const first = await signIn(server.url, email, password);
  const second = await signIn(server.url, email, password);
  t.not(first, second);
  t.is((await call(server.url, 'DELETE', '/api/session', { headers: { cookie: first, ...csrf } })).status, 200);
  t.is((await call(server.url, 'GET', '/api/me', { headers: { cookie: first } })).status, 401);
  t.is((await call(server.url, 'GET', '/api/me', { headers: { cookie: second } })).status, 200);
});

test.serial(
  'a session the store cannot look up (the store is down): 503 store_unavailable, the cookie kept; it works again once the store is back',
  async (t) => {
    const cookie = await signIn(server.url, email, password);
    const people = server.app.services.people;
    const sessionUser = people.sessionUser.bind(people);
    // What a read of a stopped PostgreSQL throws (kv-postgres.ts); test/multi/postgres-faults.test.ts stops a real one.
    people.sessionUser = () => Promise.reject(new StoreError('unavailable', 'connection refused'));
    try {
      for (const [method, path, extra] of [
        ['GET', '/api/me', {}],
        ['GET', `/api/w/${wid}/agents`, {}],
        ['POST', `/api/w/${wid}/agents`, csrf],
        ['GET', '/oauth/authorize?client_id=x', {}],
      ] as const) {
        const res = await call(server.url, method, path, { headers: { cookie, ...extra } });
        t.is(res.status, 503, `${method} ${path}: ${res.text}`);
        t.is(res.body.error.type, 'store_unavailable');
        t.regex(String(res.headers['retry-after']), /^\d+$/);
        t.deepEqual(setCookies(res.headers), [], 'the cookie is not cleared');
      }
    } finally {
      people.sessionUser = sessionUser;
    }
    const back = await call(server.url, 'GET', '/api/me', { headers: { cookie } });
    t.is(back.status, 200, back.text);
  },
);

test('a made-up sid cookie gives 401 unauthenticated', async (t) => {
  const res = await call(server.url, 'GET', '/api/me', { headers: { cookie: 'sid=Fe26.2**not-a-seal' } });
  t.is(res.status, 401);
  t.is(res.body.error.type, 'unauthenticated');
});

test('on a development server the same sealed value is accepted under the name __Host-sid', async (t) => {
  const cookie = await signIn(server.url, email, password);
  const value = cookie.slice(cookie.indexOf('=') + 1);
  const res = await call(server.url, 'GET', '/api/me', { headers: { cookie: `__Host-sid=${value}` } });
  t.is(res.status, 200, res.text);
  t.is(res.body.user.email, email);
});

// CSRF

test('a console write without x-svc-csrf gives 403 csrf', async (t) => {
  const cookie = await signIn(server.url, email, password);
  const res = await call(server.url, 'POST', `/api/w/${wid}/keys`, {
    headers: { cookie },
    json: { scope: 'inference' },
  });
  t.is(res.status, 403);
  t.is(res.body.error.type, 'csrf');
  const signOut = await call(server.url, 'DELETE', '/api/session', { headers: { cookie } });
  t.is(signOut.status, 403);
  t.is(signOut.body.error.type, 'csrf');
  t.is(
    (await call(server.url, 'GET', '/api/me', { headers: { cookie } })).status,
    200,
    'the refused sign-out ended nothing',
  );
});

test('x-svc-csrf with a value other than 1 gives 403 csrf', async (t) => {
  const cookie = await signIn(server.url, email, password);
  const res = await call(server.url, 'POST', `/api/w/${wid}/keys`, {
    headers: { cookie, 'x-svc-csrf': 'true' },
    json: { scope: 'inference' },
  });
  t.is(res.status, 403);
  t.is(res.body.error.type, 'csrf');
});

test('a console write with x-svc-csrf but from another Origin gives 403 csrf', async (t) => {
  const cookie = await signIn(server.url, email, password);
  const res = await call(server.url, 'POST', `/api/w/${wid}/keys`, {
    headers: { cookie, ...csrf, origin: 'https://evil.example' },
    json: { scope: 'inference' },
  });
  t.is(res.status, 403);
  t.is(res.body.error.type, 'csrf');
  const signIn2 = await call(server.url, 'POST', '/api/session', {
    headers: { ...csrf, origin: 'https://evil.example' },
    json: { email, password },
  });
  t.is(signIn2.status, 403, 'sign-in is a console write too');
  t.is(signIn2.body.error.type, 'csrf');
});

test('a console write with x-svc-csrf and the deployment Origin is allowed', async (t) => {
  const cookie = await writerSession();
  const origin = new URL(server.url).origin;
  const res = await call(server.url, 'POST', `/api/w/${wid}/keys`, {
    headers: { cookie, ...csrf, origin },
    json: { scope: 'inference', name: 'same-origin' },
  });
  t.is(res.status, 201, res.text);
  t.is(res.body.name, 'same-origin');
});

test('a console write with x-svc-csrf and no Origin is allowed', async (t) => {
  const cookie = await writerSession();
  const res = await call(server.url, 'POST', `/api/w/${wid}/keys`, {
    headers: { cookie, ...csrf },
    json: { scope: 'inference', name: 'no-origin' },
  });
  t.is(res.status, 201, res.text);
  t.is(res.body.name, 'no-origin');
});

test('console reads need no CSRF header', async (t) => {
  const cookie = await writerSession();
  const me = await call(server.url, 'GET', '/api/me', { headers: { cookie } });
  t.is(me.status, 200);
  const keys = await call(server.url, 'GET', `/api/w/${wid}/keys`, { headers: { cookie } });
  t.is(keys.status, 200);
});

// Production

async function productionServer(t: import('ava').ExecutionContext): Promise<{ app: App; http: HttpServer }> {
  const dataDir = await tempDir();
  dirs.push(dataDir);
  const settings = loadSettings({
    env: {},
    // Load shedding off, as for every server in the test's process: it shares the test's event loop.
    overrides: {
      env: 'production',
      baseUrl: 'https://svc.example',
      dataDir,
      'server.port': 0,
      'load.sampleIntervalMs': 0,
    },
  });
  const app = await createApp(settings, { log: createLogger('silent') });
  let http: HttpServer | undefined;
  try {
    http = await createHttpServer(app);
    await http.server.initialize();
  } catch (err) {
    await app.close();
    throw err;
  }
  t.teardown(async () => {
    await http!.server.stop();
    await app.close();
  });
  return { app, http };
}

test('production: the session cookie is __Host-sid with Secure, HttpOnly, SameSite=Lax, Path=/ and no Domain', async (t) => {
  const { app, http } = await productionServer(t);
  await app.services.people.createWorkspace({
    name: 'Prod',
    ownerEmail: 'owner@prod.example',
    ownerPassword: 'correct horse battery staple',
  });
  const res = await http.server.inject({
    method: 'POST',
    url: '/api/session',
    headers: { 'x-svc-csrf': '1' },
    payload: { email: 'owner@prod.example', password: 'correct horse battery staple' },
  });
  t.is(res.statusCode, 200, res.payload);
  const raw = res.headers['set-cookie'];
  const lines = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  t.is(lines.length, 1);
  const cookie = parseSetCookie(lines[0]!);
  t.is(cookie.name, '__Host-sid');
  t.true(cookie.attrs.has('secure'));
  t.true(cookie.attrs.has('httponly'));
  t.is(cookie.attrs.get('samesite'), 'Lax');
  t.is(cookie.attrs.get('path'), '/');
  t.false(cookie.attrs.has('domain'));

  const me = await http.server.inject({
    method: 'GET',
    url: '/api/me',
    headers: { cookie: `__Host-sid=${cookie.value}` },
  });
  t.is(me.statusCode, 200, me.payload);
  t.is(JSON.parse(me.payload).user.email, 'owner@prod.example');
  const devName = await http.server.inject({
    method: 'GET',
    url: '/api/me',
    headers: { cookie: `sid=${cookie.value}` },
  });
  t.is(devName.statusCode, 401, 'production takes only __Host-sid');
  t.is(JSON.parse(devName.payload).error.type, 'unauthenticated');
});

test('production: a console write from another Origin than the https base URL gives 403 csrf', async (t) => {
  const { http } = await productionServer(t);
  const res = await http.server.inject({
    method: 'POST',
    url: '/api/session',
    headers: { 'x-svc-csrf': '1', origin: 'https://evil.example' },
    payload: { email: 'owner@prod.example', password: 'x' },
  });
  t.is(res.statusCode, 403);
  t.is(JSON.parse(res.payload).error.type, 'csrf');
});

test('production refuses an http base URL, naming baseUrl', (t) => {
  const error = t.throws(() =>
    loadSettings({ env: {}, overrides: { env: 'production', baseUrl: 'http://svc.example', dataDir: '/nonexistent' } }),
  );
  t.regex(error!.message, /baseUrl/);
});

test('production refuses a missing base URL, naming baseUrl', (t) => {
  const error = t.throws(() => loadSettings({ env: {}, overrides: { env: 'production', dataDir: '/nonexistent' } }));
  t.regex(error!.message, /baseUrl/);
});
