import test from 'ava';
import fc from 'fast-check';
import { prefersHtml } from '../../src/http/system.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { stopAndClean } from '../helpers/process.js';

/**
 * `GET /` (issue 37 part 5): a browser is sent to the console (and from there, not signed in, to
 * the sign-in page; test/browser/root.test.ts opens it in chromium); any other client gets a JSON
 * answer naming the console, the docs and the API, each of which answers.
 */
let server: ServedInProcess;

test.before(async () => {
  server = await serveInProcess();
});

test.after.always(async () => {
  await stopAndClean(server);
});

/** What Chrome and Firefox send when a person opens an address. */
const NAVIGATION =
  'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7';

async function get(path: string, accept?: string): Promise<Response> {
  return fetch(`${server.url}${path}`, { redirect: 'manual', headers: accept === undefined ? {} : { accept } });
}

test('a browser opening / is redirected to the console, which sends a person not signed in to /login', async (t) => {
  for (const accept of [NAVIGATION, 'text/html', 'text/html, application/json;q=0.9']) {
    const res = await get('/', accept);
    t.is(res.status, 303, accept);
    t.is(res.headers.get('location'), '/console', accept);
    t.regex(res.headers.get('vary') ?? '', /accept/i);
  }
  const console = await get('/console', NAVIGATION);
  t.is(console.status, 302);
  t.regex(console.headers.get('location') ?? '', /^\/login/);
});

test('a JSON client gets where the console, the docs and the API are, and each of them answers', async (t) => {
  for (const accept of [undefined, '*/*', 'application/json', 'application/json, text/html;q=0.5']) {
    const res = await get('/', accept);
    t.is(res.status, 200, String(accept));
    t.regex(res.headers.get('content-type') ?? '', /^application\/json/);
    const body = (await res.json()) as {
      name: string;
      console: string;
      docs: Record<string, string>;
      api: Record<string, string>;
    };
    t.is(body.name, 'svc');
    t.is(body.console, `${server.url}/console`);
    t.deepEqual(body.docs, { api: `${server.url}/docs/api`, errors: `${server.url}/docs/errors` });
    t.is(body.api.openapi, `${server.url}/openapi.json`);
    t.is(body.api.mcp, `${server.url}/mcp`);
    t.is(body.api.gate, `${server.url}/v1/actions/authorize`);
    t.false(JSON.stringify(body).includes('didYouMean'), 'no longer the 404 that suggested GET /mcp');
  }
  const { docs, api } = (await (await get('/')).json()) as {
    docs: Record<string, string>;
    api: Record<string, string>;
  };
  for (const url of [docs.api!, docs.errors!, api.openapi!, api.health!]) {
    const res = await fetch(url);
    t.is(res.status, 200, url);
  }
  t.is((await fetch(api.gate!, { method: 'POST' })).status, 401, 'the gate asks for an agent key');
  // HEAD answers as GET does, without a body.
  const head = await fetch(`${server.url}/`, { method: 'HEAD' });
  t.is(head.status, 200);
});

test('prefersHtml: an Accept header that lists text/html above zero and not below JSON, and nothing else', (t) => {
  t.true(prefersHtml(NAVIGATION));
  t.true(prefersHtml('TEXT/HTML'));
  t.false(prefersHtml(undefined));
  t.false(prefersHtml(''));
  t.false(prefersHtml('*/*'));
  t.false(prefersHtml('text/*'));
  t.false(prefersHtml('text/html;q=0'));
  t.false(prefersHtml('application/json, text/html;q=0.5'));
  t.false(prefersHtml('text/html;q=abc'));
  fc.assert(
    fc.property(fc.string({ maxLength: 300 }), (header) => typeof prefersHtml(header) === 'boolean'),
    { numRuns: 2000 },
  );
  // Any list holding text/html with a positive weight and no application/json prefers the page.
  fc.assert(
    fc.property(
      fc.array(fc.constantFrom('image/webp', '*/*;q=0.8', 'application/xml;q=0.9', 'text/plain'), { maxLength: 4 }),
      fc.integer({ min: 1, max: 1000 }),
      (others, q) => prefersHtml([...others, `text/html;q=${q / 1000}`].join(', ')),
    ),
  );
});
