import test from 'ava';
import { existsSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { startMcpUpstream, type McpUpstream } from '../helpers/mcp-upstream.js';
import { stopAndClean } from '../helpers/process.js';
import { clipped, launch, screenshot, signedInPage } from './reports-support.js';

/**
 * The MCP tools section's "Add a server" card in a real browser (issue 37, part 1): an owner adds
 * an upstream MCP server (name, URL, secret) and reads the connection test (the tools pinned and
 * approved, or the API's `problem`: a server that refuses the secret names its 401); "Test again"
 * finds the server down, then finds a tool changed upstream, which waits in the list above and
 * is approved there. The ledger records the adding under the owner, as the API's route does.
 */
let server: ServedInProcess;
let upstream: McpUpstream;
let browser: Browser;
let owner: Person;

test.before(async () => {
  upstream = await startMcpUpstream({ secret: 'upstream-secret-1' });
  server = await serveInProcess({
    env: { SVC_SIGNIN_RATE_PER_MINUTE: '1000', SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1' },
  });
  owner = await ownerConsole(server);
  browser = await launch();
});

test.after.always(async () => {
  await browser?.close();
  await stopAndClean(server);
  await upstream?.close();
});

test.serial('add a server, read the connection test, test again, approve a changed tool', async (t) => {
  t.timeout(90_000);
  const { page, problems, close } = await signedInPage(browser, server.url, owner.cookie, 'desktop');
  try {
    t.is((await page.goto(`${server.url}/console/mcp?w=${owner.wid}`))?.status(), 200);
    // A wrong secret: added, and the answer says why it cannot be used.
    await page.fill('#mcp-add-name', 'wrong');
    await page.fill('#mcp-add-url', upstream.url);
    await page.fill('#mcp-add-secret', 'not-the-secret');
    await page.click('#mcp-add-submit');
    const result = page.locator('#mcp-test-result');
    await result.waitFor();
    t.is(await result.getAttribute('data-ok'), 'false');
    t.regex((await result.textContent()) ?? '', /^Added, but wrong cannot be used yet: .*401/);

    // The right secret: its tools pinned and approved.
    await page.fill('#mcp-add-name', 'files');
    await page.fill('#mcp-add-url', upstream.url);
    await page.fill('#mcp-add-secret', 'upstream-secret-1');
    await page.click('#mcp-add-submit');
    await page.locator('#mcp-test-result[data-ok="true"]').waitFor();
    t.regex((await result.textContent()) ?? '', /^Connected: \d+ tools pinned and approved \(.*echo.*\)\.$/);
    t.is(await page.locator('#mcp-add-secret').inputValue(), '', 'the secret is not kept on the page');
    const added = (await owner.ledger()).filter((r) => r.kind === 'mcp.server_added');
    t.deepEqual(
      added.map((r) => [r.subject, r.actor]),
      [
        ['wrong', `user:${owner.id}`],
        ['files', `user:${owner.id}`],
      ],
    );

    // Down: the test says so.
    upstream.down = true;
    await page.click('#mcp-test');
    await page.locator('#mcp-test-result[data-ok="false"]').waitFor();
    t.regex((await result.textContent()) ?? '', /^files cannot be used: .*503/);

    // Back, with a tool changed upstream: it waits for approval in the list above, and is approved there.
    upstream.down = false;
    upstream.change('echo', { description: 'Says the text back, and more.' });
    await page.click('#mcp-test');
    await page.locator('#mcp-test-result[data-ok="true"]').waitFor();
    t.regex((await result.textContent()) ?? '', /^files answers: \d+ tools, 1 waiting for your approval below\.$/);
    const approve = page.getByRole('button', { name: /^Approve echo/ });
    await approve.waitFor();
    await approve.click();
    await approve.waitFor({ state: 'detached' });
    const tools = expectStatus(await owner.get('/mcp-servers/files/tools'), 200, 'tools').body.data as Array<{
      status: string;
    }>;
    t.true(tools.every((x) => x.status === 'approved'));
    t.deepEqual(await clipped(page, '#mcp-add button, #mcp-add input'), []);
    t.true(existsSync(await screenshot(page, 'console-mcp-add-desktop')));
    t.deepEqual(problems, []);
  } finally {
    await close();
  }
});
