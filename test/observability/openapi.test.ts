import test from 'ava';
import { Validator } from '@seriousme/openapi-schema-validator';
import { errorTypes } from '../../src/errors/catalogue.js';
import { inProcessServer, type InProcess } from '../helpers/in-process.js';

/**
 * GET /openapi.json and GET /docs/api (issue 21): an OpenAPI 3.1 document generated
 * from the server's own route table, valid by a maintained OpenAPI validator, naming every route
 * the server answers with its credential, its schemas and its errors from the catalogue; the
 * reference page lists the same operations with no script and a strict CSP.
 */
let s: InProcess;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
let doc: any;

test.before(async () => {
  s = await inProcessServer();
  await s.http.server.initialize();
  const res = await s.http.server.inject('/openapi.json');
  if (res.statusCode !== 200) throw new Error(`openapi.json: ${res.statusCode}`);
  doc = JSON.parse(res.payload);
});

test.after.always(() => s?.close());

const openApiPath = (path: string) => path.replace(/\{(\w+)[*?]?\d*\}/g, '{$1}');

test('the document is OpenAPI 3.1 and valid by the OpenAPI schema validator', async (t) => {
  t.is(doc.openapi, '3.1.0');
  const result = await new Validator().validate(doc);
  t.deepEqual(result.errors ?? [], []);
  t.true(result.valid);
});

test('every route of the server table is in the document, with its method', (t) => {
  const missing: string[] = [];
  const table = s.http.server.table();
  t.true(table.length > 80, 'the table holds the whole API');
  for (const route of table) {
    // A CORS preflight (OPTIONS /mcp) is the browser's, not an operation: the document leaves it out.
    if (route.method === 'options') continue;
    const item = doc.paths[openApiPath(route.path)];
    if (!item?.[route.method]) missing.push(`${route.method} ${route.path}`);
  }
  t.deepEqual(missing, []);
  // And nothing else: every operation is one the server answers.
  const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.keys(item as object).map((m) => `${m} ${path}`),
  );
  const served = new Set(table.map((r) => `${r.method} ${openApiPath(r.path)}`));
  t.deepEqual(
    operations.filter((o) => !served.has(o)),
    [],
  );
});

test('each operation names its credential, its schemas from joi and its errors from the catalogue', (t) => {
  const authorize = doc.paths['/v1/actions/authorize'].post;
  t.deepEqual(authorize.security, [{ agentKey: [] }]);
  t.deepEqual(authorize.requestBody.content['application/json'].schema.required, ['type', 'summary']);
  t.is(
    authorize.requestBody.content['application/json'].schema.properties.payment.properties.currency.pattern,
    '^[A-Z]{3}$',
  );
  t.deepEqual(authorize.responses['401']['x-svc-error-types'], ['unauthenticated', 'invalid_api_key']);
  t.true(authorize.responses['429']['x-svc-error-types'].includes('rate_limited'));
  t.true(authorize.responses['400']['x-svc-error-types'].includes('invalid_request'));
  t.is(authorize.responses['400'].content['application/json'].schema.$ref, '#/components/schemas/Error');

  const agents = doc.paths['/api/w/{wid}/agents'].post;
  t.deepEqual(agents.security, [{ session: [] }]);
  t.true(agents.responses['403']['x-svc-error-types'].includes('csrf'));
  t.true(agents.parameters.some((p: { name: string; in: string }) => p.name === 'wid' && p.in === 'path'));

  const freezes = doc.paths['/v1/admin/freezes'].post;
  t.deepEqual(freezes.security, [{ serviceToken: ['agents:freeze'] }]);
  t.true(freezes.responses['400']['x-svc-error-types'].includes('invalid_selector'));

  // Errors a route's own logic answers with, as the route declares them.
  const typesOf = (op: { responses: Record<string, { 'x-svc-error-types'?: string[] }> }) =>
    Object.values(op.responses).flatMap((r) => r['x-svc-error-types'] ?? []);
  const chat = doc.paths['/v1/chat/completions'].post;
  for (const type of ['budget_exhausted', 'sensitive_data_blocked', 'upstream_failure', 'agent_stopped'])
    t.true(typesOf(chat).includes(type), type);
  t.true(typesOf(authorize).includes('idempotency_conflict'));
  t.true(typesOf(doc.paths['/v1/actions/{id}/settle'].post).includes('already_settled'));

  t.deepEqual(doc.paths['/healthz'].get.security, []);
  t.is(
    doc.paths['/v1/messages'].post.responses['401'].content['application/json'].schema.$ref,
    '#/components/schemas/AnthropicError',
  );
  t.is(
    doc.paths['/oauth/token'].post.responses['400'].content['application/json'].schema.$ref,
    '#/components/schemas/OAuthError',
  );

  // Every error type any operation names is in the catalogue, and the catalogue is carried whole.
  const named = Object.values(doc.paths).flatMap((item) =>
    Object.values(item as object).flatMap((op) =>
      Object.values((op as { responses: Record<string, { 'x-svc-error-types'?: string[] }> }).responses).flatMap(
        (r) => r['x-svc-error-types'] ?? [],
      ),
    ),
  );
  t.deepEqual(
    named.filter((type) => !errorTypes.includes(type as never)),
    [],
  );
  t.deepEqual(Object.keys(doc['x-svc-errors']).sort(), [...errorTypes].sort());
  t.truthy(doc['x-svc-errors'].budget_exhausted.fix);
});

test('/docs/api is a readable page of every operation, with no script and a strict CSP', async (t) => {
  const res = await s.http.server.inject('/docs/api');
  t.is(res.statusCode, 200);
  t.regex(String(res.headers['content-type']), /^text\/html/);
  const csp = String(res.headers['content-security-policy']);
  t.regex(csp, /default-src 'none'/);
  t.notRegex(csp, /unsafe-inline|script-src/);
  t.notRegex(res.payload, /<script|\son[a-z]+=|style=/i);
  for (const path of Object.keys(doc.paths)) t.true(res.payload.includes(`<code>${path}</code>`), path);
  t.true(res.payload.includes('href="/docs/errors#invalid_api_key"'));
  const css = await s.http.server.inject('/docs/api.css');
  t.is(css.statusCode, 200);
  t.regex(String(css.headers['content-type']), /^text\/css/);
});
