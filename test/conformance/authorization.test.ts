import test from 'ava';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { SERVER_ENV, makeBot } from '../approvals/support.js';
import { ownerConsole } from '../helpers/console.js';
import { stopAndClean, tempDir } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * The conformance suite's authorization-server scenarios (metadata endpoint, authorization code
 * grant) against our OAuth server, unattended: the suite prints the authorization URL and waits
 * for its loopback callback; a scripted browser (Debian's chromium) opens it, signs in on our
 * sign-in page, lands back on the consent page, and connects the one agent. The suite then
 * exchanges the code and checks the answers (state, iss, PKCE, no-store, token shape).
 */
const require = createRequire(import.meta.url);
const CLI = join(dirname(require.resolve('@modelcontextprotocol/conformance/package.json')), 'dist', 'index.js');
const CHROMIUM = '/usr/bin/chromium';

let server: ServedInProcess;
let browser: Browser;

/** A loopback port free right now, for the suite's callback server. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

test.before(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium); .ci/run does.`);
  server = await serveInProcess({ env: SERVER_ENV });
  await makeBot(await ownerConsole(server), 'oauth-conformance-bot', [{ actions: ['mcp.*'], domains: ['*'] }]);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
});

test.after.always(async () => {
  await browser?.close();
  await stopAndClean(server);
});

test('the authorization-server scenarios pass, a scripted browser signing in and consenting', async (t) => {
  t.timeout(180_000);
  const port = await freePort();
  const discovery = (await (await fetch(`${server.url}/.well-known/oauth-authorization-server`)).json()) as {
    authorization_endpoint: string;
    registration_endpoint: string;
  };
  const registered = await fetch(discovery.registration_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'MCP conformance suite',
      redirect_uris: [`http://127.0.0.1:${port}/callback`],
      token_endpoint_auth_method: 'none',
    }),
  });
  t.is(registered.status, 201);
  const { client_id: clientId } = (await registered.json()) as { client_id: string };

  const out = await tempDir('conformance-auth-');
  const child = spawn(
    process.execPath,
    [
      CLI,
      'authorization',
      '--url',
      server.url,
      '--client-id',
      clientId,
      '--resource',
      `${server.url}/mcp`,
      '--port',
      String(port),
      '-o',
      out,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const authorizeUrl = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      output += String(d);
      const line = output.split('\n').find((l) => l.startsWith(`${discovery.authorization_endpoint}?`));
      if (line) resolve(line.trim());
    });
    child.on('close', () => reject(new Error(`the suite ended without an authorization URL:\n${output}`)));
  });
  child.stderr.on('data', (d) => {
    output += String(d);
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));

  // The person: not signed in, so the authorization URL leads to sign-in and back to consent.
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  await page.goto(await authorizeUrl);
  t.regex(new URL(page.url()).pathname, /^\/login$/, 'a person not signed in is sent to sign in first');
  await page.fill('#email', server.boot.owner!.email);
  await page.fill('#password', `${server.boot.owner!.password}-changed`);
  await Promise.all([
    page.waitForURL((u) => u.pathname === '/oauth/authorize'),
    page.click('#signin button[type=submit]'),
  ]);
  t.is(
    await page.locator('input[name=agent]').count(),
    1,
    'the consent page offers the one agent this person may connect',
  );
  await Promise.all([
    page.waitForURL((u) => u.port === String(port) && u.pathname === '/callback'),
    page.click('#allow'),
  ]);
  t.is(await page.locator('body').textContent(), 'OK. You can close this page.');
  await context.close();

  t.is(await exited, 0, output);
  const checks = readdirSync(out).flatMap(
    (dir) =>
      JSON.parse(readFileSync(join(out, dir, 'checks.json'), 'utf8')) as Array<{
        id: string;
        status: string;
        errorMessage?: string;
      }>,
  );
  t.deepEqual(
    checks.filter((c) => c.status === 'FAILURE').map((c) => `${c.id}: ${c.errorMessage ?? ''}`),
    [],
    'no check failed',
  );
  // No warning: Client ID Metadata Documents (URL client ids, a SHOULD of 2025-11-25) are offered
  // (client_id_metadata_document_supported), besides dynamic registration.
  t.deepEqual(
    checks.filter((c) => c.status === 'WARNING').map((c) => c.id),
    [],
  );
  t.true(
    checks.some((c) => c.id === 'authorization-server-metadata-cimd' && c.status === 'SUCCESS'),
    'the CIMD check passed',
  );
  t.true(
    checks.some((c) => c.id === 'authorization-code-grant' && c.status === 'SUCCESS'),
    'the code grant went through',
  );
});
