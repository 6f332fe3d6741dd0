import test from 'ava';
import { makeBot, SERVER_ENV, type Bot } from '../approvals/support.js';
import { ownerConsole } from '../helpers/console.js';
import { assertError, call, mcpHeaders, mcpPost } from '../helpers/http.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { stopAndClean } from '../helpers/process.js';

/**
 * Browser clients at /mcp (issue 34 part 4), as exact HTTP: an origin listed in
 * `mcp.allowedOrigins` gets its preflight answered and every answer of /mcp readable (the 401
 * challenge, the session id); any other origin is still refused 403 (DNS rebinding), preflight
 * included; with the setting empty (the default), no origin but the deployment's own gets in.
 */
const APP = 'https://app.example';
const EVIL = 'https://evil.example';
const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'page', version: '1' } },
};

let server: ServedInProcess;
let bot: Bot;

test.before(async () => {
  server = await serveInProcess({
    env: { ...SERVER_ENV, SVC_MCP_ALLOWED_ORIGINS: `${APP}, https://other.example:8443` },
  });
  bot = await makeBot(await ownerConsole(server), 'page-bot', [{ actions: ['email'], domains: ['*'] }]);
});

test.after.always(() => stopAndClean(server));

const preflight = (origin: string | undefined, headers = 'authorization, content-type, mcp-protocol-version') =>
  call(server.url, 'OPTIONS', '/mcp', {
    headers: {
      ...(origin ? { origin } : {}),
      'access-control-request-method': 'POST',
      'access-control-request-headers': headers,
    },
  });

test('a preflight from an allowed origin names that origin, the methods and the headers MCP clients send', async (t) => {
  const res = await preflight(APP, 'authorization, content-type, mcp-protocol-version, mcp-method, mcp-param-region');
  t.is(res.status, 204);
  t.is(res.headers['access-control-allow-origin'], APP);
  t.is(res.headers['access-control-allow-methods'], 'GET, POST, DELETE');
  t.deepEqual(String(res.headers['access-control-allow-headers']).split(', '), [
    'authorization',
    'content-type',
    'mcp-session-id',
    'mcp-protocol-version',
    'last-event-id',
    'mcp-method',
    'mcp-param-region',
  ]);
  t.is(res.headers['access-control-expose-headers'], 'mcp-session-id, www-authenticate');
  t.is(res.headers['access-control-allow-credentials'], undefined, 'a bearer token, never a cookie');
  t.true(String(res.headers.vary).split(',').includes('origin'), 'caches keep answers per origin');
  t.is((await preflight('https://other.example:8443')).status, 204, 'every listed origin, port included');
});

test('a preflight from any other origin, or none, is refused 403 without CORS headers', async (t) => {
  for (const origin of [EVIL, 'https://app.example:444', 'http://app.example', undefined]) {
    const res = await preflight(origin);
    assertError(t, res, 403, 'forbidden');
    t.is(res.headers['access-control-allow-origin'], undefined, String(origin));
  }
});

test('the 401 challenge an allowed page gets is readable: origin allowed, www-authenticate exposed', async (t) => {
  const res = await mcpPost(server.url, undefined, INITIALIZE, { headers: { origin: APP } });
  t.is(res.status, 401);
  t.is(res.headers['access-control-allow-origin'], APP);
  t.is(res.headers['access-control-expose-headers'], 'mcp-session-id, www-authenticate');
  t.regex(String(res.headers['www-authenticate']), /resource_metadata=/);
  t.true(String(res.headers.vary).split(',').includes('origin'));
});

test('an allowed page opens a session and reads its id; another origin is refused 403', async (t) => {
  const opened = await mcpPost(server.url, bot.key, INITIALIZE, { headers: { origin: APP } });
  t.is(opened.status, 200, opened.text);
  t.is(opened.headers['access-control-allow-origin'], APP);
  t.truthy(opened.headers['mcp-session-id']);
  t.is(opened.headers['access-control-expose-headers'], 'mcp-session-id, www-authenticate');

  const refused = await mcpPost(server.url, bot.key, INITIALIZE, { headers: { origin: EVIL } });
  assertError(t, refused, 403, 'forbidden');
  t.is(refused.headers['access-control-allow-origin'], undefined);
  t.regex(refused.body.error.fix, /mcp\.allowedOrigins/);

  const stream = await call(server.url, 'GET', '/mcp', {
    headers: {
      ...mcpHeaders(bot.key),
      accept: 'text/event-stream',
      origin: EVIL,
      'mcp-session-id': String(opened.headers['mcp-session-id']),
    },
  });
  assertError(t, stream, 403, 'forbidden');
});

test('with mcp.allowedOrigins empty (the default) a page on another origin gets nothing', async (t) => {
  const plain = await serveInProcess({ env: SERVER_ENV });
  try {
    const res = await call(plain.url, 'OPTIONS', '/mcp', {
      headers: { origin: APP, 'access-control-request-method': 'POST' },
    });
    assertError(t, res, 403, 'forbidden');
    const post = await mcpPost(plain.url, 'ask_x', INITIALIZE, { headers: { origin: APP } });
    t.is(post.headers['access-control-allow-origin'], undefined);
    t.not(post.status, 200);
  } finally {
    await stopAndClean(plain);
  }
});
