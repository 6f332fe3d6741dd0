import test from 'ava';
import { call } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

let server: ServedInProcess;

test.before(async () => {
  server = await serveInProcess();
});

test.after.always(() => stopAndClean(server));

test('every answer carries x-request-id, svc-version and a fresh traceparent', async (t) => {
  for (const [method, path] of [
    ['GET', '/healthz'],
    ['GET', '/v1/models'],
    ['GET', '/nope'],
  ] as const) {
    const res = await call(server.url, method, path);
    t.regex(String(res.headers['x-request-id']), /^req_[0-9A-Za-z]{22}$/, path);
    t.is(res.headers['svc-version'], '2026-10-01', path);
    t.regex(String(res.headers.traceparent), /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/, path);
  }
});

test('an error body echoes x-request-id as requestId and links its docs anchor', async (t) => {
  const res = await call(server.url, 'GET', '/v1/models');
  t.is(res.status, 401);
  t.is(res.body.error.type, 'unauthenticated');
  t.is(res.body.error.requestId, res.headers['x-request-id']);
  t.is(res.body.error.docs, `${server.url}/docs/errors#unauthenticated`);
  t.true(res.body.error.fix.length > 0);
});

test('a valid incoming traceparent is continued: same trace id, new span id', async (t) => {
  const incoming = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const res = await call(server.url, 'GET', '/healthz', { headers: { traceparent: incoming } });
  const [version, trace, span, flags] = String(res.headers.traceparent).split('-');
  t.is(version, '00');
  t.is(trace, '4bf92f3577b34da6a3ce929d0e0e4736');
  t.not(span, '00f067aa0ba902b7');
  t.is(flags, '01');
});

test('an invalid traceparent starts a new trace', async (t) => {
  for (const invalid of [
    '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
    'garbage',
    '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
  ]) {
    const res = await call(server.url, 'GET', '/healthz', { headers: { traceparent: invalid } });
    const answered = String(res.headers.traceparent);
    t.regex(answered, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/, invalid);
    t.not(answered.split('-')[1], '00000000000000000000000000000000');
    t.not(answered.split('-')[1], '4bf92f3577b34da6a3ce929d0e0e4736', 'an invalid parent id is not continued');
  }
});

test('security headers: nosniff and no-store on every answer; frame and referrer policies outside /v1/; no HSTS over http', async (t) => {
  for (const path of ['/v1/models', '/api/me', '/docs/errors', '/healthz', '/v1/nope']) {
    const res = await call(server.url, 'GET', path);
    t.is(res.headers['x-content-type-options'], 'nosniff', path);
    t.regex(String(res.headers['cache-control']), /no-store|no-cache/, path);
    const document = !path.startsWith('/v1/');
    t.is(res.headers['x-frame-options'], document ? 'DENY' : undefined, path);
    t.is(res.headers['referrer-policy'], document ? 'no-referrer' : undefined, path);
    t.is(res.headers['strict-transport-security'], undefined, path);
  }
  const api = await call(server.url, 'GET', '/v1/models');
  t.is(api.headers['cache-control'], 'no-store', 'API answers are never cached');
});

test('request ids differ per request', async (t) => {
  const a = await call(server.url, 'GET', '/healthz');
  const b = await call(server.url, 'GET', '/healthz');
  t.not(a.headers['x-request-id'], b.headers['x-request-id']);
});
