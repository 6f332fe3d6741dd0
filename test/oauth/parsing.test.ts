import test from 'ava';
import fc from 'fast-check';
import { createAgent, type AgentFixture } from '../helpers/gate.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { clientIdUrlProblem, freshnessMs, readDocument, MAX_TTL_MS } from '../../src/oauth/client-metadata.js';
import { grantedScope, refreshScopeProblem, SCOPES_SUPPORTED } from '../../src/oauth/scopes.js';

/**
 * fast-check over what a client sends as client_id and scope (issue 20): the parsers never
 * throw, grant only known scopes, and the authorization and token endpoints never answer 5xx,
 * whatever the client_id (a registered-looking id, any text, an http or https URL) or scope.
 * No name resolves here (an injected lookup refuses every one), so no URL reaches the network.
 */
let server: ServedInProcess;
let agent: AgentFixture;

test.before(async () => {
  server = await serveInProcess({
    env: { SVC_OAUTH_CLIENT_METADATA_TIMEOUT_MS: '200' },
    lookup: (hostname, _options, callback) =>
      callback(Object.assign(new Error(`${hostname} does not resolve here`), { code: 'ENOTFOUND' }), ''),
  });
  agent = await createAgent(server);
});

test.after.always(() => stopAndClean(server));

const anyText = fc.string({ unit: 'binary', maxLength: 300 });
const scopes = fc.option(
  fc.oneof(
    anyText,
    fc
      .array(fc.oneof(fc.constantFrom(...SCOPES_SUPPORTED, 'mcp', 'openid', ''), fc.string({ maxLength: 12 })), {
        maxLength: 6,
      })
      .map((parts) => parts.join(' ')),
  ),
  { nil: undefined },
);
const clientIds = fc.oneof(
  anyText,
  fc.constantFrom(
    'mcp_x',
    '',
    'https://',
    'https://a.test',
    'https://a.test/',
    'https://a.test/./x',
    'https://u:p@a.test/x',
  ),
  fc
    .tuple(fc.constantFrom('https', 'http', 'HTTPS', 'ftp'), fc.domain(), fc.webPath(), fc.webQueryParameters())
    .map(([scheme, host, path, query]) => `${scheme}://${host}${path}${query ? `?${query}` : ''}`),
);

test('grantedScope and refreshScopeProblem never throw and grant only svc:agent, with offline_access', (t) => {
  fc.assert(
    fc.property(scopes, scopes, (asked, atRefresh) => {
      const granted = grantedScope(asked);
      if ('problem' in granted) return typeof granted.problem === 'string';
      const values = granted.scope.split(' ');
      if (values[0] !== 'svc:agent' || values.some((v) => !(SCOPES_SUPPORTED as readonly string[]).includes(v)))
        return false;
      const beyond = refreshScopeProblem(granted.scope, atRefresh);
      return beyond === null || typeof beyond === 'string';
    }),
  );
  t.pass();
});

test('the URL rules, the caching headers and the document reader never throw anything but their own problem', (t) => {
  fc.assert(
    fc.property(
      clientIds,
      fc.dictionary(fc.constantFrom('cache-control', 'expires', 'date'), anyText),
      fc.jsonValue(),
      (id, headers, doc) => {
        const problem = clientIdUrlProblem(id);
        if (problem !== null && typeof problem !== 'string') return false;
        const ms = freshnessMs(headers, Date.now());
        if (!(ms >= 0 && ms <= MAX_TTL_MS)) return false;
        try {
          readDocument(id, doc);
        } catch (err) {
          return (err as Error).constructor.name === 'ClientMetadataProblem';
        }
        return true;
      },
    ),
  );
  t.pass();
});

test('GET /oauth/authorize with any client_id and scope never answers 5xx', async (t) => {
  await fc.assert(
    fc.asyncProperty(clientIds, scopes, fc.option(anyText, { nil: undefined }), async (clientId, scope, redirect) => {
      const query = new URLSearchParams({
        response_type: 'code',
        client_id: clientId,
        code_challenge: 'a'.repeat(43),
        code_challenge_method: 'S256',
        ...(scope === undefined ? {} : { scope }),
        ...(redirect === undefined ? {} : { redirect_uri: redirect }),
      });
      const res = await server.http.server.inject({
        method: 'GET',
        url: `/oauth/authorize?${query}`,
        headers: { cookie: agent.cookie },
      });
      return res.statusCode < 500;
    }),
    { numRuns: 150 },
  );
  t.pass();
});

test('POST /oauth/token with any client_id, scope and grant never answers 5xx', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      clientIds,
      scopes,
      fc.constantFrom('authorization_code', 'refresh_token', 'client_credentials', ''),
      anyText,
      async (clientId, scope, grant, secret) => {
        const res = await server.http.server.inject({
          method: 'POST',
          url: '/oauth/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: new URLSearchParams({
            grant_type: grant,
            client_id: clientId,
            refresh_token: secret,
            code: secret,
            code_verifier: 'a'.repeat(43),
            redirect_uri: 'http://127.0.0.1/cb',
            ...(scope === undefined ? {} : { scope }),
          }).toString(),
        });
        return res.statusCode < 500 && typeof (JSON.parse(res.payload) as { error?: unknown }).error === 'string';
      },
    ),
    { numRuns: 150 },
  );
  t.pass();
});
