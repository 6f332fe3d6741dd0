import test from 'ava';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { makeBot, SERVER_ENV } from '../approvals/support.js';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { bearer } from '../helpers/http.js';
import { listenLoopback } from '../helpers/loopback-http.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { stopAndClean } from '../helpers/process.js';

/**
 * An upstream that echoes what it was sent (here, the Authorization header in its 403 answer, as
 * sent, as JSON, URL-encoded, and cut by the body excerpt's end) has the server's bearer secret
 * taken out of every text of the diagnosis: what adding it answers, the console's view of its
 * tools, the ledger and a proxied call's error show `[secret]`, never the secret.
 */
const SECRET = 'sk-echo"me/please+0123456789abcdef';
let server: ServedInProcess;
let owner: Person;
let echo: Awaited<ReturnType<typeof listenLoopback>>;

test.before(async () => {
  echo = await listenLoopback((req, res) => {
    req.resume();
    const auth = String(req.headers.authorization);
    // The excerpt (200 characters) ends inside the first echo.
    const body = `${'x'.repeat(180)} got ${auth} json ${JSON.stringify({ auth })} url ${encodeURIComponent(auth)}`;
    res.writeHead(403, `Forbidden ${auth}`, { 'content-type': 'text/plain' }).end(body);
  });
  server = await serveInProcess({ env: { ...SERVER_ENV, SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1' } });
  owner = await ownerConsole(server);
});

test.after.always(async () => {
  await stopAndClean(server);
  await echo?.close();
});

/** Whether any part of the secret long enough to matter shows in `text`. */
const leaks = (text: string) =>
  [SECRET, 'sk-echo', '0123456789abcdef', encodeURIComponent(SECRET), JSON.stringify(SECRET).slice(1, -1)].some((s) =>
    text.includes(s),
  );

test('a diagnosis of an upstream that echoes its Authorization header holds no secret', async (t) => {
  const added = expectStatus(
    await owner.send('POST', '/mcp-servers', { name: 'echo', url: echo.url, secret: SECRET }),
    201,
    'add',
  );
  t.like(added.body.problem, { cause: 'http_status', status: 403 });
  t.regex(JSON.stringify(added.body.problem), /\[secret\]/, 'the echo is shown, the secret taken out');
  t.false(leaks(JSON.stringify(added.body)), JSON.stringify(added.body));

  const view = expectStatus(await owner.get('/mcp-servers/echo/tools'), 200, 'view');
  t.like(view.body.problem, { cause: 'http_status', status: 403 });
  t.false(leaks(JSON.stringify(view.body)), JSON.stringify(view.body));

  const bot = await makeBot(owner, 'echo-bot', [{ actions: ['mcp.*'], domains: ['*'] }]);
  const client = new Client({ name: 'echo-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: bearer(bot.key) } }),
  );
  try {
    const err = await t.throwsAsync(client.callTool({ name: 'echo__anything', arguments: {} }));
    t.false(leaks(JSON.stringify({ message: err?.message, data: (err as { data?: unknown }).data })), err?.message);
  } finally {
    await client.close();
  }

  t.false(leaks(JSON.stringify(await owner.ledger())), 'the ledger holds no secret');
});
