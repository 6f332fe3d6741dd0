import test from 'ava';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { makeBot, SERVER_ENV, type Bot } from '../approvals/support.js';
import { ownerConsole } from '../helpers/console.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { stopAndClean } from '../helpers/process.js';
import { launch } from './support.js';

/**
 * A browser-based MCP client at /mcp (issue 34 part 4), in chromium: a page on an origin listed
 * in `mcp.allowedOrigins` reads the 401 challenge that starts OAuth, opens a session with its
 * bearer token, reads the session id and lists the tools (the browser's own preflights and CORS
 * checks, nothing simulated); a page on another origin gets nothing (the browser refuses the
 * fetch).
 */
let browser: Browser;
let server: ServedInProcess;
let pages: Server[] = [];
let allowedPage = '';
let otherPage = '';
let bot: Bot;

/** An empty page on a port of its own: an origin of its own. */
async function servePage(): Promise<string> {
  const page = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html>'));
  await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
  pages.push(page);
  return `http://127.0.0.1:${(page.address() as AddressInfo).port}`;
}

test.before(async () => {
  allowedPage = await servePage();
  otherPage = await servePage();
  server = await serveInProcess({ env: { ...SERVER_ENV, SVC_MCP_ALLOWED_ORIGINS: allowedPage } });
  bot = await makeBot(await ownerConsole(server), 'browser-bot', [{ actions: ['email'], domains: ['*'] }]);
  browser = await launch();
});

test.after.always(async () => {
  await browser?.close();
  await stopAndClean(server);
  for (const page of pages) page.close();
  pages = [];
});

/** What the page's MCP client sees, run in the page. */
async function clientIn(origin: string) {
  const page = await browser.newPage();
  try {
    await page.goto(origin);
    return await page.evaluate(
      async ({ mcp, key }) => {
        const headers = {
          accept: 'application/json, text/event-stream',
          'content-type': 'application/json',
          'mcp-protocol-version': '2025-11-25',
        };
        const body = (method: string, id: number, params: object = {}) =>
          JSON.stringify({ jsonrpc: '2.0', id, method, params });
        const json = async (res: Response) => {
          const text = await res.text();
          const data = text.split('\n').find((l) => l.startsWith('data: '));
          return JSON.parse(data ? data.slice(6) : text);
        };
        try {
          const challenge = await fetch(mcp, { method: 'POST', headers, body: body('tools/list', 1) });
          const init = await fetch(mcp, {
            method: 'POST',
            headers: { ...headers, authorization: `Bearer ${key}` },
            body: body('initialize', 2, {
              protocolVersion: '2025-11-25',
              capabilities: {},
              clientInfo: { name: 'page', version: '1' },
            }),
          });
          const session = init.headers.get('mcp-session-id');
          await init.text();
          const list = await fetch(mcp, {
            method: 'POST',
            headers: { ...headers, authorization: `Bearer ${key}`, 'mcp-session-id': session ?? '' },
            body: body('tools/list', 3),
          });
          return {
            challenge: { status: challenge.status, authenticate: challenge.headers.get('www-authenticate') },
            init: init.status,
            session,
            tools: ((await json(list)).result.tools as Array<{ name: string }>).map((x) => x.name),
          };
        } catch (err) {
          return { refused: String(err) };
        }
      },
      { mcp: `${server.url}/mcp`, key: bot.key },
    );
  } finally {
    await page.close();
  }
}

test.serial('a page on an allowed origin reads the challenge, opens a session and lists the tools', async (t) => {
  const seen = await clientIn(allowedPage);
  t.like(seen, { challenge: { status: 401 }, init: 200 });
  t.regex(String((seen as { challenge: { authenticate: string } }).challenge.authenticate), /resource_metadata=/);
  t.truthy((seen as { session: string }).session);
  t.deepEqual((seen as { tools: string[] }).tools, ['authorize_action', 'get_action', 'settle_action']);
});

test.serial('a page on another origin gets nothing: the browser refuses the fetch', async (t) => {
  const seen = await clientIn(otherPage);
  t.regex(String((seen as { refused?: string }).refused), /TypeError: Failed to fetch/);
});
