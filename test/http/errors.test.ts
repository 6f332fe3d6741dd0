/**
 * against the real server: every common error row that exists in the
 * foundation is provoked through the public surface, and its body is checked for the exact
 * shape (type, message, fix, docs, requestId, and the row's own extra members).
 *
 * `internal` needs a route that throws, which no shipped route does: it is built in-process with
 * the same createHttpServer and one extra route, then exercised with server.inject.
 */
import test, { type ExecutionContext } from 'ava';
import Boom from '@hapi/boom';
import Joi from 'joi';
import type { Server } from '@hapi/hapi';
import { createApp, type App } from '../../src/app.js';
import { entryOf, errorTypes } from '../../src/errors/catalogue.js';
import { AppError } from '../../src/errors/app-error.js';
import { createHttpServer } from '../../src/server.js';
import { StoreError } from '../../src/store/index.js';
import { createLogger } from '../../src/lib/log.js';
import { loadSettings } from '../../src/settings/load.js';
import { bearer, call, csrf, signIn, type Json, type Reply, ownerSession } from '../helpers/http.js';
import { removeDir, tempDir } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { withStore } from '../helpers/store.js';
import { clearOfMinuteEdge } from '../helpers/wait.js';

// Rate-limit windows are whole minutes of the clock: each test counts inside one.
test.beforeEach(() => clearOfMinuteEdge());

const MEMBER = { email: 'member@example.test', password: 'member-password-0001' };
const OTHER_OWNER = { email: 'other-owner@example.test', password: 'other-owner-password-01' };
/** A well-formed workspace key value that was never minted: ask_ + 43 base64url characters. */
const UNKNOWN_KEY = `ask_${'A'.repeat(21)}-_${'z'.repeat(20)}`;

let server: ServedInProcess;
let limited: ServedInProcess;
let wid: string;
let otherWid: string;
let adminKey: string;
let inferenceKey: string;
let revokedKey: string;
let otherKeyId: string;
let ownerCookie: string;
let memberCookie: string;

interface InProcess {
  app: App;
  server: Server;
  dataDir: string;
}
let production: InProcess;
let development: InProcess;

/** The foundation's own server, in-process, with routes that fail in ways no shipped route does. */
async function inProcess(env: 'production' | 'development'): Promise<InProcess> {
  const dataDir = await tempDir('svc-errors-inproc-');
  const settings = loadSettings({
    env: {},
    overrides: { env, dataDir, 'server.port': 0, ...(env === 'production' ? { baseUrl: 'https://svc.example' } : {}) },
  });
  const app = await createApp(settings, { log: createLogger('silent') });
  const http = await createHttpServer(app);
  http.server.route([
    {
      method: 'GET',
      path: '/test/throws',
      options: { auth: false },
      handler() {
        throw new Error('secret detail xyz');
      },
    },
    {
      method: 'GET',
      path: '/test/throws-app-error',
      options: { auth: false },
      handler() {
        throw new AppError('internal', { message: 'secret detail xyz: db at /var/lib/secret' });
      },
    },
    {
      // What the store throws when a write keeps conflicting with other processes' writes past its
      // retry bound (kv-lmdb.ts, kv-postgres.ts): no shipped route can be made to do it on demand.
      method: 'GET',
      path: '/test/store-conflict',
      options: { auth: false },
      handler() {
        throw new StoreError('conflict', 'store write conflicted with concurrent writers 32 times');
      },
    },
    {
      // An error the pipeline cannot map (its status cannot be read): rendered as internal, never hapi's own page.
      method: 'GET',
      path: '/test/unmappable',
      options: { auth: false },
      handler() {
        const err = Boom.badRequest('odd');
        Object.defineProperty(err, 'output', {
          get() {
            throw new TypeError('no output here');
          },
        });
        throw err;
      },
    },
    {
      method: 'POST',
      path: '/test/nested',
      options: {
        auth: false,
        validate: {
          payload: Joi.object({
            type: Joi.string().required(),
            payment: Joi.object({ amount: Joi.number().integer(), currency: Joi.string().length(3) }),
          }),
        },
      },
      handler: () => ({ ok: true }),
    },
  ]);
  await http.server.initialize();
  return { app, server: http.server, dataDir };
}

async function closeInProcess(p: InProcess | undefined): Promise<void> {
  if (!p) return;
  await p.server.stop();
  await p.app.close();
  await removeDir(p.dataDir);
}

/** An injected response in the shape of the helpers' Reply. */
async function inject(p: InProcess, method: string, url: string, payload?: unknown): Promise<Reply> {
  const res = await p.server.inject({ method, url, ...(payload === undefined ? {} : { payload: payload as object }) });
  let body: unknown = res.payload;
  try {
    body = JSON.parse(res.payload);
  } catch {
    /* keep the text */
  }
  return { status: res.statusCode, headers: res.headers as Reply['headers'], body, text: res.payload };
}

/**
 * Asserts the error shape: status, type, and exactly the members type, message, fix, docs, requestId
 * plus `extra`; docs is `${base}/docs/errors#<type>`; requestId equals x-request-id.
 */
/** The `error` of an answer: its requestId, and the fields `extra` names (errors, …), as sent. */
interface ErrorBody {
  type: string;
  message: string;
  fix: string;
  docs: string;
  [field: string]: Json;
}

function assertError(
  t: ExecutionContext,
  res: Reply,
  base: string,
  status: number,
  type: string,
  extra: string[] = [],
) {
  t.is(res.status, status, res.text);
  t.regex(String(res.headers['content-type']), /^application\/json/);
  t.deepEqual(Object.keys(res.body ?? {}), ['error'], res.text);
  const error = res.body.error as ErrorBody;
  t.is(error.type, type);
  t.deepEqual(Object.keys(error).sort(), ['type', 'message', 'fix', 'docs', 'requestId', ...extra].sort());
  t.is(typeof error.message, 'string');
  t.true(error.message.length > 0);
  t.is(typeof error.fix, 'string');
  t.true(error.fix.length > 0);
  t.is(error.docs, `${base}/docs/errors#${type}`);
  t.regex(String(res.headers['x-request-id']), /^req_[0-9A-Za-z]{22}$/);
  t.is(error.requestId, res.headers['x-request-id']);
  return error;
}

test.before(async () => {
  [server, limited, production, development] = await Promise.all([
    serveInProcess(),
    serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '3' } }),
    inProcess('production'),
    inProcess('development'),
  ]);
  wid = server.boot.workspaceId!;
  await withStore(server.dataDir, async (app) => {
    adminKey = (await app.services.keys.mint(wid, { scope: 'admin' }, 'test')).key;
    inferenceKey = (await app.services.keys.mint(wid, { scope: 'inference' }, 'test')).key;
    const revoked = await app.services.keys.mint(wid, { scope: 'inference' }, 'test');
    await app.services.keys.revoke(wid, revoked.id);
    revokedKey = revoked.key;
    await app.services.people.addMember({
      workspaceId: wid,
      email: MEMBER.email,
      password: MEMBER.password,
      role: 'member',
    });
    otherWid = (
      await app.services.people.createWorkspace({
        name: 'Other',
        ownerEmail: OTHER_OWNER.email,
        ownerPassword: OTHER_OWNER.password,
      })
    ).workspaceId;
    otherKeyId = (await app.services.keys.mint(otherWid, { scope: 'inference' }, 'test')).id;
  });
  [ownerCookie, memberCookie] = await Promise.all([
    ownerSession(server),
    signIn(server.url, MEMBER.email, MEMBER.password),
  ]);
});

test.after.always(async () => {
  await Promise.all([server?.stop(), limited?.stop()]);
  await Promise.all([
    server && removeDir(server.dataDir),
    limited && removeDir(limited.dataDir),
    closeInProcess(production),
    closeInProcess(development),
  ]);
});

test('invalid_json: a body that is not JSON', async (t) => {
  const res = await call(server.url, 'POST', '/api/session', {
    headers: { ...csrf, 'content-type': 'application/json' },
    body: '{"email": "a@example.test", "password": ',
  });
  assertError(t, res, server.url, 400, 'invalid_json');
});

test('invalid_request: every bad field listed with its dotted path; message joins them with "; "', async (t) => {
  const res = await call(server.url, 'POST', '/v1/admin/keys', {
    headers: bearer(adminKey),
    json: { scope: 'bogus', name: 5 },
  });
  const error = assertError(t, res, server.url, 400, 'invalid_request', ['errors']);
  t.deepEqual(error.errors.map((e: { field: unknown }) => e.field).sort(), ['name', 'scope']);
  for (const e of error.errors) {
    t.deepEqual(Object.keys(e).sort(), ['field', 'message']);
    t.is(typeof e.message, 'string');
    t.true(e.message.length > 0);
  }
  t.regex(error.errors.find((e: { field: string }) => e.field === 'scope').message, /scope/);
  t.regex(error.errors.find((e: { field: string }) => e.field === 'name').message, /name/);
  t.is(error.message, error.errors.map((e: { message: string }) => e.message).join('; '));
});

test('invalid_request: a body that is not an object is at fault as a whole (field null)', async (t) => {
  const res = await call(server.url, 'POST', '/v1/admin/keys', {
    headers: bearer(adminKey),
    json: [{ scope: 'admin' }],
  });
  const error = assertError(t, res, server.url, 400, 'invalid_request', ['errors']);
  t.is(error.errors.length, 1);
  t.is(error.errors[0].field, null);
  t.is(error.message, error.errors[0].message);
});

test('invalid_request: a bad query parameter is named by a dotted path', async (t) => {
  const res = await call(server.url, 'GET', `/api/w/${wid}/keys?limit=0`, { headers: { cookie: ownerCookie } });
  const error = assertError(t, res, server.url, 400, 'invalid_request', ['errors']);
  t.deepEqual(
    error.errors.map((e: { field: unknown }) => e.field),
    ['query.limit'],
  );
  t.is(error.message, error.errors[0].message);
});

test('invalid_request: fields nested in the body are dotted paths (server.inject)', async (t) => {
  const res = await inject(production, 'POST', '/test/nested', { payment: { amount: 12.5, currency: 'EURO' } });
  const error = assertError(t, res, 'https://svc.example', 400, 'invalid_request', ['errors']);
  t.deepEqual(error.errors.map((e: { field: unknown }) => e.field).sort(), [
    'payment.amount',
    'payment.currency',
    'type',
  ]);
  t.is(error.message, error.errors.map((e: { message: string }) => e.message).join('; '));
});

test('unauthenticated: no credential', async (t) => {
  const models = await call(server.url, 'GET', '/v1/models');
  assertError(t, models, server.url, 401, 'unauthenticated');
  const me = await call(server.url, 'GET', '/api/me');
  assertError(t, me, server.url, 401, 'unauthenticated');
  const admin = await call(server.url, 'POST', '/v1/admin/keys', { json: { scope: 'inference' } });
  assertError(t, admin, server.url, 401, 'unauthenticated');
});

test('invalid_api_key: an unknown key, and a revoked one', async (t) => {
  const unknown = await call(server.url, 'GET', '/v1/models', { headers: bearer(UNKNOWN_KEY) });
  assertError(t, unknown, server.url, 401, 'invalid_api_key');
  const viaHeader = await call(server.url, 'GET', '/v1/models', { headers: { 'x-api-key': UNKNOWN_KEY } });
  assertError(t, viaHeader, server.url, 401, 'invalid_api_key');
  const revoked = await call(server.url, 'GET', '/v1/models', { headers: bearer(revokedKey) });
  assertError(t, revoked, server.url, 401, 'invalid_api_key');
});

test('forbidden: an inference key on an admin route', async (t) => {
  const res = await call(server.url, 'POST', '/v1/admin/keys', {
    headers: bearer(inferenceKey),
    json: { scope: 'inference' },
  });
  assertError(t, res, server.url, 403, 'forbidden');
  // The same key is valid where its scope is enough.
  t.is((await call(server.url, 'GET', '/v1/models', { headers: bearer(inferenceKey) })).status, 200);
});

test('forbidden: a member may not manage workspace keys', async (t) => {
  const res = await call(server.url, 'GET', `/api/w/${wid}/keys`, { headers: { cookie: memberCookie } });
  const error = assertError(t, res, server.url, 403, 'forbidden');
  t.regex(error.message, /owner/);
  // The owner may.
  t.is((await call(server.url, 'GET', `/api/w/${wid}/keys`, { headers: { cookie: ownerCookie } })).status, 200);
});

test('csrf: a console write without x-svc-csrf', async (t) => {
  const res = await call(server.url, 'POST', `/api/w/${wid}/keys`, {
    headers: { cookie: ownerCookie },
    json: { scope: 'inference' },
  });
  assertError(t, res, server.url, 403, 'csrf');
  const del = await call(server.url, 'DELETE', `/api/w/${wid}/keys/key_unknown`, { headers: { cookie: ownerCookie } });
  assertError(t, del, server.url, 403, 'csrf');
});

test('csrf: a console write from another origin', async (t) => {
  const res = await call(server.url, 'POST', `/api/w/${wid}/keys`, {
    headers: { cookie: ownerCookie, ...csrf, origin: 'https://evil.example' },
    json: { scope: 'inference' },
  });
  assertError(t, res, server.url, 403, 'csrf');
});

test('not_found: no such object in this workspace', async (t) => {
  const res = await call(server.url, 'DELETE', `/api/w/${wid}/keys/key_unknown`, {
    headers: { cookie: ownerCookie, ...csrf },
  });
  assertError(t, res, server.url, 404, 'not_found');
});

test('not_found, not forbidden: an id of another workspace', async (t) => {
  // A workspace the caller is not a member of.
  const list = await call(server.url, 'GET', `/api/w/${otherWid}/keys`, { headers: { cookie: ownerCookie } });
  assertError(t, list, server.url, 404, 'not_found');
  const mint = await call(server.url, 'POST', `/api/w/${otherWid}/keys`, {
    headers: { cookie: ownerCookie, ...csrf },
    json: { scope: 'inference' },
  });
  assertError(t, mint, server.url, 404, 'not_found');
  // A key of another workspace, named under the caller's own workspace.
  const del = await call(server.url, 'DELETE', `/api/w/${wid}/keys/${otherKeyId}`, {
    headers: { cookie: ownerCookie, ...csrf },
  });
  assertError(t, del, server.url, 404, 'not_found');
});

test('route_not_found: didYouMean names the nearest real route', async (t) => {
  const res = await call(server.url, 'GET', '/v1/modles');
  const error = assertError(t, res, server.url, 404, 'route_not_found', ['didYouMean']);
  t.is(error.didYouMean, 'GET /v1/models');
  const healthz = await call(server.url, 'GET', '/healthzz');
  t.is(assertError(t, healthz, server.url, 404, 'route_not_found', ['didYouMean']).didYouMean, 'GET /healthz');
});

test('method_not_allowed: the allow header lists the accepted methods', async (t) => {
  const res = await call(server.url, 'DELETE', '/v1/models');
  assertError(t, res, server.url, 405, 'method_not_allowed');
  const allow = String(res.headers.allow)
    .split(',')
    .map((m) => m.trim());
  t.true(allow.includes('GET'), String(res.headers.allow));
  t.false(allow.includes('DELETE'));
});

test("a malformed percent-escape in the path, on any method: 400 invalid_request naming the path, never hapi's own 500", async (t) => {
  for (const [method, path] of [
    ['GET', '/v1/hooks/issuer/%ZZ'],
    ['PUT', '/v1/actions/%ZZ/settle'],
    ['POST', '/v1/actions/%ZZ/settle'],
    ['DELETE', '/v1/actions/%E0%A4%A/settle'],
    ['GET', '/no/such/route/%'],
  ] as const) {
    const res = await inject(development, method, path);
    const error = assertError(t, res, 'http://127.0.0.1', 400, 'invalid_request', ['errors']);
    t.deepEqual(
      (error.errors as Array<{ field: string }>).map((e) => e.field),
      ['path'],
    );
    t.regex(String(error.message), /percent-escape/);
  }
  t.regex(
    (await inject(development, 'GET', '/v1/hooks/issuer/%ZZ')).body.error.message,
    /\(%ZZ\)/,
    'the bad escape is named',
  );
});

test('body_too_large: a body over 1 MB with content-length', async (t) => {
  const body = JSON.stringify({ scope: 'inference', name: 'x'.repeat(1_100_000) });
  const res = await call(server.url, 'POST', '/v1/admin/keys', {
    headers: {
      ...bearer(adminKey),
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
    },
    body,
  });
  assertError(t, res, server.url, 413, 'body_too_large');
  // The connection and the server are fine afterwards.
  t.is((await call(server.url, 'GET', '/healthz')).status, 200);
});

test('rate_limited: sign-ins over the per-minute limit, with retry-after', async (t) => {
  const attempt = () =>
    call(limited.url, 'POST', '/api/session', {
      headers: csrf,
      json: { email: 'nobody@example.test', password: 'wrong-password' },
    });
  for (let i = 0; i < 3; i += 1) {
    assertError(t, await attempt(), limited.url, 401, 'unauthenticated');
  }
  const res = await attempt();
  assertError(t, res, limited.url, 429, 'rate_limited');
  const retryAfter = String(res.headers['retry-after']);
  t.regex(retryAfter, /^\d+$/);
  t.true(Number(retryAfter) >= 1 && Number(retryAfter) <= 60, retryAfter);
});

test('internal in production: 500 with the generic message, the cause never shown', async (t) => {
  const res = await inject(production, 'GET', '/test/throws');
  const error = assertError(t, res, 'https://svc.example', 500, 'internal');
  t.is(error.message, entryOf('internal').message);
  t.is(error.message, 'Internal error.');
  t.false(res.text.includes('secret detail'));
  t.false(res.text.includes('Error:'));

  // A typed 5xx with its own message is generic in production too.
  const typed = await inject(production, 'GET', '/test/throws-app-error');
  const typedError = assertError(t, typed, 'https://svc.example', 500, 'internal');
  t.is(typedError.message, 'Internal error.');
  t.false(typed.text.includes('secret detail'));
});

test('a write that keeps conflicting with other writers: 503 store_unavailable with retry-after, saying so (production too)', async (t) => {
  for (const p of [production, development]) {
    const res = await inject(p, 'GET', '/test/store-conflict');
    t.is(res.status, 503, res.text);
    t.is(res.body.error.type, 'store_unavailable');
    t.regex(res.body.error.message, /too many concurrent writes to the same records; nothing of it was kept/);
    t.false(res.text.includes('32 times'), 'the store error itself is not shown');
    t.regex(String(res.headers['retry-after']), /^\d+$/);
  }
});

test('an error the pipeline cannot map is rendered as internal from the catalogue, not as a bare 500 page', async (t) => {
  const res = await inject(production, 'GET', '/test/unmappable');
  assertError(t, res, 'https://svc.example', 500, 'internal');
  t.false(res.text.includes('no output here'));
});

test('internal in development: still type internal', async (t) => {
  const res = await inject(development, 'GET', '/test/throws');
  t.is(res.status, 500);
  t.is(res.body.error.type, 'internal');
  t.is(res.body.error.requestId, res.headers['x-request-id']);
  t.regex(res.body.error.docs, /\/docs\/errors#internal$/);
});

test('GET /docs/errors is an HTML page with an anchor for every error type', async (t) => {
  const res = await call(server.url, 'GET', '/docs/errors');
  t.is(res.status, 200);
  t.regex(String(res.headers['content-type']), /^text\/html/);
  t.regex(res.text, /^<!doctype html>/i);
  for (const type of errorTypes) {
    t.true(res.text.includes(`id="${type}"`), type);
  }
});

test('every catalogue entry has a status and a fix; every documented type is in it', (t) => {
  for (const type of errorTypes) {
    const entry = entryOf(type);
    t.true(Number.isInteger(entry.status) && entry.status >= 400 && entry.status <= 599, type);
    t.true(entry.fix.trim().length > 0, type);
    t.true(entry.message.trim().length > 0, type);
    t.regex(type, /^[a-z]+(_[a-z]+)*$/);
  }
  const spec72 = [
    'invalid_json',
    'invalid_request',
    'unauthenticated',
    'invalid_api_key',
    'forbidden',
    'csrf',
    'not_found',
    'route_not_found',
    'method_not_allowed',
    'separation_of_duties',
    'second_owner_required',
    'second_person_required',
    'body_too_large',
    'rate_limited',
    'internal',
  ];
  for (const type of spec72) t.true((errorTypes as string[]).includes(type), type);
});
