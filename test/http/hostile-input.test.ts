import test from 'ava';
import fc from 'fast-check';
import type { Server } from '@hapi/hapi';
import { encodeKey, keyFits, MAX_KEY_BYTES } from '../../src/store/tuple-key.js';
import { createAgent } from '../helpers/gate.js';
import { csrf, type Json } from '../helpers/http.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { removeDir } from '../helpers/process.js';
import { poll } from '../helpers/wait.js';

/**
 * Input no client should send, through every route family: identifiers far longer than any id
 * (each would become a store key), malformed path escapes, OAuth client_ids of any length. Each
 * answer is a 4xx of the documented shape, never a 5xx, and the malformed ones are logged.
 */
let server: ServedInProcess;
let hapi: Server;
let wid: string;
const credentials: Record<string, Record<string, string>> = {};

test.before(async () => {
  server = await serveInProcess({ logLevel: 'info' });
  hapi = server.http.server;
  wid = server.boot.workspaceId!;
  const agent = await createAgent(server);
  const { keys, serviceTokens } = server.app.services;
  const admin = (await keys.mint(wid, { scope: 'admin' }, 'test')).key;
  const token = (
    await serviceTokens.create(wid, {
      name: 'hostile',
      scopes: ['agents:read', 'agents:write', 'agents:freeze', 'approvals:read', 'evidence:read'],
      expiresInDays: 1,
    })
  ).token;
  const session = { cookie: agent.cookie, ...csrf };
  Object.assign(credentials, {
    session,
    'session-host': session,
    'workspace-key': { authorization: `Bearer ${admin}` },
    'agent-key': { authorization: `Bearer ${agent.key}` },
    'service-token': { authorization: `Bearer ${token}` },
  });
});

test.after.always(async () => {
  await server?.stop();
  if (server) await removeDir(server.dataDir);
});

interface Answer {
  status: number;
  body: Json;
  text: string;
}

async function inject(
  method: string,
  url: string,
  headers: Record<string, string>,
  payload?: unknown,
): Promise<Answer> {
  const res = await hapi.inject({
    method,
    url,
    headers,
    ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
  });
  let body: Json = null;
  try {
    body = JSON.parse(res.payload) as Json;
  } catch {
    /* a page */
  }
  return { status: res.statusCode, body, text: res.payload.slice(0, 400) };
}

/** Not a 5xx; an error has the shape of its route: the catalogue's, or RFC 6749's on the OAuth endpoints. */
function refused(answer: Answer): boolean {
  if (answer.status >= 500) return false;
  if (answer.status < 400) return true;
  const body = answer.body as { error?: unknown; error_description?: unknown } | null;
  if (typeof body?.error === 'string') return typeof body.error_description === 'string';
  return typeof (body?.error as { type?: unknown } | undefined)?.type === 'string';
}

test('keyFits: a key fits exactly when its encoding is at most MAX_KEY_BYTES', (t) => {
  const part = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 1200 }),
    fc.string({ unit: 'grapheme', maxLength: 700 }),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
  );
  fc.assert(
    fc.property(fc.oneof(part, fc.array(part, { minLength: 1, maxLength: 4 })), (key) => {
      t.is(keyFits(key), encodeKey(key).length <= MAX_KEY_BYTES);
    }),
    { numRuns: 300 },
  );
});

test("every route, with each path identifier thousands of characters long: a 4xx of the route's shape, never a 5xx", async (t) => {
  const routes = hapi
    .table()
    .filter((r) => r.method !== '*' && !r.settings.isInternal && r.path.includes('{'))
    .map((r) => {
      const auth = r.settings.auth as { strategies?: string[] } | false | undefined;
      const strategy = auth ? auth.strategies?.[0] : undefined;
      return { method: r.method.toUpperCase(), path: r.path, headers: strategy ? credentials[strategy] : {} };
    })
    // Routes signed by a third party (inbound hooks) or bearing OAuth tokens refuse before any lookup.
    .filter((r) => r.headers !== undefined) as Array<{ method: string; path: string; headers: Record<string, string> }>;
  t.true(routes.length > 40, `${routes.length} routes with path parameters`);
  // Each as long as no id is (encoded, up to 6,000 characters of the path).
  const long = fc
    .tuple(fc.constantFrom(2_000, 4_093, 6_000), fc.constantFrom('a', 'é', '0', '-', '𝄞'))
    .map(([n, c]) => encodeURIComponent(c.repeat(Math.ceil(n / c.length))));
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...routes), long, fc.boolean(), async (route, value, keepWid) => {
      const url = route.path.replace(/\{(\w+)\*?\}/g, (_m, name: string) => (name === 'wid' && keepWid ? wid : value));
      const body = route.method === 'GET' || route.method === 'DELETE' ? undefined : { id: value, name: value };
      const answer = await inject(route.method, url, route.headers, body);
      if (!refused(answer)) t.log(`${route.method} ${route.path}: ${answer.status} ${answer.text}`);
      return refused(answer);
    }),
    { numRuns: 400, endOnFailure: true },
  );
  t.pass();
});

test("an OAuth client_id of any length: RFC 6749's error shape at /oauth/token and /oauth/revoke, an error page at /oauth/authorize", async (t) => {
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  for (const n of [200, 2_049, 4_093, 20_000]) {
    const clientId = 'c'.repeat(n);
    for (const [path, payload] of [
      ['/oauth/token', `grant_type=authorization_code&code=x&code_verifier=y&client_id=${clientId}`],
      ['/oauth/revoke', `token=x&client_id=${clientId}`],
    ] as const) {
      const res = await hapi.inject({ method: 'POST', url: path, headers: form, payload });
      t.true(res.statusCode === 400 || res.statusCode === 401, `${path} ${n}: ${res.statusCode} ${res.payload}`);
      const body = JSON.parse(res.payload) as { error: string; error_description: string };
      t.is(body.error, n > 2_048 ? 'invalid_request' : 'invalid_client', `${path} ${n}`);
      t.is(typeof body.error_description, 'string');
      t.is(res.headers['cache-control'], 'no-store');
    }
    const basic = Buffer.from(`${clientId}:secret`).toString('base64');
    const viaBasic = await hapi.inject({
      method: 'POST',
      url: '/oauth/revoke',
      headers: { ...form, authorization: `Basic ${basic}` },
      payload: 'token=x',
    });
    t.is(JSON.parse(viaBasic.payload).error, n > 2_048 ? 'invalid_request' : 'invalid_client');
    const page = await hapi.inject({
      method: 'GET',
      url: `/oauth/authorize?response_type=code&client_id=${clientId}`,
      headers: { cookie: credentials.session!.cookie! },
    });
    t.is(page.statusCode, 400, `authorize ${n}`);
    t.regex(String(page.headers['content-type']), /^text\/html/);
  }
  // A URL client_id (a metadata document) past 2,048 characters: the same answers, nothing fetched.
  const url = encodeURIComponent(`https://app.example/${'p'.repeat(4_093)}`);
  const token = await hapi.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: form,
    payload: `grant_type=authorization_code&code=x&code_verifier=y&client_id=${url}`,
  });
  t.is(token.statusCode, 400, token.payload);
  t.is(JSON.parse(token.payload).error, 'invalid_request');
  const page = await hapi.inject({
    method: 'GET',
    url: `/oauth/authorize?response_type=code&client_id=${url}`,
    headers: { cookie: credentials.session!.cookie! },
  });
  t.is(page.statusCode, 400);
  t.regex(page.payload, /longer than 2048 characters/);
});

test('a malformed path escape on a method the route does not take: 400 invalid_request, and one log line saying so', async (t) => {
  for (const [method, path] of [
    ['GET', '/v1/hooks/issuer/%ZZ'],
    ['PUT', '/v1/actions/%ZZ/settle'],
  ] as const) {
    const res = await inject(method, path, {});
    t.is(res.status, 400, res.text);
    t.is((res.body as { error: { type: string } }).error.type, 'invalid_request');
    const requestId = (res.body as { error: { requestId: string } }).error.requestId;
    const line = await poll(
      () =>
        server
          .logs()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Record<string, unknown>)
          .find((l) => l.requestId === requestId && l.msg === 'request'),
      (found) => found !== undefined,
      { timeoutMs: 5_000 },
    );
    t.like(line, { method, status: 400 });
  }
});
