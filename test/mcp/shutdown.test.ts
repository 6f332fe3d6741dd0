import test from 'ava';
import { expectStatus, ownerConsole } from '../helpers/console.js';
import { mcpPost } from '../helpers/http.js';
import { startMcpUpstream } from '../helpers/mcp-upstream.js';
import { removeDir, startServer } from '../helpers/process.js';
import { makeBot, SERVER_ENV } from '../approvals/support.js';

/**
 * Found by the soak (issue 15): after a proxied tool call, the server's shared client of the
 * upstream keeps a stream open to it (the MCP client's standalone event stream), so on SIGTERM
 * `svc serve` logged "stopped" and then never exited while the upstream was up. SIGTERM must end
 * the process (exit 0) whatever upstream connections are open.
 */
test('svc serve exits 0 on SIGTERM after proxied tool calls, with the upstream still up', async (t) => {
  const upstream = await startMcpUpstream({ secret: 'upstream-secret-1' });
  const server = await startServer({ env: { ...SERVER_ENV, SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1' } });
  try {
    const owner = await ownerConsole(server);
    const bot = await makeBot(owner, 'files-bot', [{ actions: ['mcp.files.echo'], domains: ['*'] }]);
    expectStatus(
      await owner.send('POST', '/mcp-servers', {
        name: 'files',
        url: upstream.url,
        secret: 'upstream-secret-1',
        allowTools: ['echo'],
      }),
      201,
      'upstream',
    );
    // A lone tools/call without a session, as a stateless client sends it: the shared client serves it.
    const res = await mcpPost(
      server.url,
      bot.key,
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'files__echo', arguments: { text: 'before the stop' } },
      },
      { revision: '2025-11-25' },
    );
    t.is(res.status, 200, res.text);
    t.deepEqual(res.body.result?.content, [{ type: 'text', text: 'before the stop' }]);

    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([
      server.stop('SIGTERM'),
      new Promise<string>((resolve) => {
        timer = setTimeout(() => resolve('still running 20 s after SIGTERM'), 20_000);
      }),
    ]);
    clearTimeout(timer);
    t.is(code, 0);
    t.regex(server.stderr(), /"msg":"stopped"/);
  } finally {
    await server.stop('SIGKILL');
    await upstream.close();
    await removeDir(server.dataDir);
  }
});
