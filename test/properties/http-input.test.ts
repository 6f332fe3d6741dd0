import test from 'ava';
import fc from 'fast-check';
import type { Server } from '@hapi/hapi';
import type { App } from '../../src/app.js';
import type { Json } from '../helpers/http.js';
import { inProcessServer, type InProcess } from '../helpers/in-process.js';

/** Arbitrary input, through the real server (server.inject): never a 5xx, always the documented error shape. */
let running: InProcess;
let app: App;
let server: Server;
let adminKey: string;
let wid: string;

test.before(async () => {
  running = await inProcessServer({ 'rateLimits.signInPerMinute': 1_000_000 });
  app = running.app;
  const created = await app.services.people.createWorkspace({
    name: 'P',
    ownerEmail: 'p@example.com',
    ownerPassword: 'correct horse battery',
  });
  wid = created.workspaceId;
  adminKey = (await app.services.keys.mint(wid, { scope: 'admin' }, 'test')).key;
  server = running.http.server;
  await server.initialize();
});

test.after.always(() => running?.close());

function wellFormedError(status: number, body: Json): boolean {
  if (status < 400) return true;
  return (
    status < 500 &&
    typeof body?.error?.type === 'string' &&
    typeof body.error.message === 'string' &&
    typeof body.error.fix === 'string' &&
    typeof body.error.requestId === 'string'
  );
}

const jsonValue = fc.jsonValue({ maxDepth: 3 });

test('POST /v1/admin/keys: any JSON body answers 201 or a 4xx of the documented error shape', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        jsonValue,
        fc.record(
          {
            scope: fc.constantFrom('agent', 'inference', 'admin', 'x'),
            name: fc.oneof(fc.string(), fc.integer()),
            agentId: fc.string(),
            team: fc.string(),
          },
          { requiredKeys: [] },
        ),
      ),
      async (body) => {
        const res = await server.inject({
          method: 'POST',
          url: '/v1/admin/keys',
          headers: { authorization: `Bearer ${adminKey}` },
          payload: JSON.stringify(body),
        });
        const parsed = JSON.parse(res.payload);
        // invalid_request carries errors; invalid_json (never for these bodies) would not.
        return (
          (res.statusCode === 201 || (res.statusCode === 400 && parsed.error.type === 'invalid_request')) &&
          wellFormedError(res.statusCode, parsed) &&
          (res.statusCode !== 400 ||
            parsed.error.errors.every(
              (e: { message: unknown; field: unknown }) =>
                typeof e.message === 'string' && (e.field === null || typeof e.field === 'string'),
            ))
        );
      },
    ),
    { numRuns: 150 },
  );
  t.pass();
});

test.serial(
  'a __proto__ key anywhere in a body is refused as invalid_request naming it, and nothing is minted',
  async (t) => {
    const count = async () => (await app.services.keys.list(wid, { limit: 200 })).data.length;
    const before = await count();
    for (const body of [
      '{"__proto__":""}',
      '{"scope":"admin","__proto__":{"isAdmin":true}}',
      '{"name":{"__proto__":{}}}',
    ]) {
      const res = await server.inject({
        method: 'POST',
        url: '/v1/admin/keys',
        headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
        payload: body,
      });
      const parsed = JSON.parse(res.payload);
      t.is(res.statusCode, 400, body);
      t.is(parsed.error.type, 'invalid_request');
      t.deepEqual(
        parsed.error.errors.map((e: { field: unknown }) => e.field),
        ['__proto__'],
      );
    }
    t.deepEqual(({} as Record<string, unknown>).isAdmin, undefined, 'no prototype was polluted');
    t.is(await count(), before);
  },
);

test('POST /api/session: arbitrary bytes never give a 5xx', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.uint8Array({ maxLength: 300 }),
      fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded'),
      async (bytes, type) => {
        const res = await server.inject({
          method: 'POST',
          url: '/api/session',
          headers: { 'x-svc-csrf': '1', 'content-type': type },
          payload: Buffer.from(bytes),
        });
        return res.statusCode >= 400 && wellFormedError(res.statusCode, JSON.parse(res.payload));
      },
    ),
    { numRuns: 150 },
  );
  t.pass();
});

test('any method and path: never a 5xx, and unknown routes name a real one', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE'), fc.webPath(), async (method, path) => {
      const res = await server.inject({
        method,
        url: path.startsWith('/') ? path : `/${path}`,
        headers: { 'x-svc-csrf': '1' },
      });
      if (res.statusCode >= 500) return false;
      const body = res.statusCode >= 400 ? JSON.parse(res.payload) : undefined;
      if (body?.error?.type === 'route_not_found') return /^(GET|POST|PUT|PATCH|DELETE) \//.test(body.error.didYouMean);
      return res.statusCode < 400 || wellFormedError(res.statusCode, body);
    }),
    { numRuns: 200 },
  );
  t.pass();
});

test('console routes: arbitrary workspace ids and query strings never give a 5xx', async (t) => {
  const signIn = await server.inject({
    method: 'POST',
    url: '/api/session',
    headers: { 'x-svc-csrf': '1' },
    payload: { email: 'p@example.com', password: 'correct horse battery' },
  });
  const cookie = String(signIn.headers['set-cookie']).split(';')[0]!;
  await fc.assert(
    fc.asyncProperty(fc.string({ maxLength: 40 }), fc.string({ maxLength: 40 }), async (id, cursor) => {
      const res = await server.inject({
        method: 'GET',
        url: `/api/w/${encodeURIComponent(id)}/keys?limit=${encodeURIComponent(cursor)}`,
        headers: { cookie },
      });
      return (
        res.statusCode < 500 && (res.statusCode === 200 || wellFormedError(res.statusCode, JSON.parse(res.payload)))
      );
    }),
    { numRuns: 150 },
  );
  const own = await server.inject({ method: 'GET', url: `/api/w/${wid}/keys`, headers: { cookie } });
  t.is(own.statusCode, 200);
});
