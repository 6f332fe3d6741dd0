import test from 'ava';
import type { Server } from '@hapi/hapi';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sources } from '../helpers/imports.js';
import { inProcessServer, type InProcess } from '../helpers/in-process.js';
import { ROOT } from '../helpers/process.js';

/**
 * Tests where a newcomer looks: every route of the server has a test file under the test folder
 * of the domain that declares it (`src/agents/` → `test/agents/`) that names its path, written out
 * (`/v1/admin/agents`, `/api/w/${wid}/agents/${id}`) or, for a workspace route, as the console
 * client writes it (`owner.get('/agents')`). The domain is the hapi plugin that registered the
 * route (`svc-<domain>`), read from the live route table, so a new route cannot be missed.
 */
let running: InProcess;
let server: Server;

test.before(async () => {
  running = await inProcessServer();
  server = running.http.server;
  await server.initialize();
});

test.after.always(() => running?.close());

/** Plugins whose test folder is not their name: the folder of src/ that declares them. */
const FOLDER_OF_PLUGIN: Readonly<Record<string, string>> = {
  'kill-switch': 'killswitch',
  'ledger-tiles': 'ledger',
  github: 'integrations',
  stripe: 'integrations',
  ssf: 'integrations',
  acp: 'integrations',
  'oauth-device': 'oauth',
  'api-docs': 'observability',
  system: 'http',
};

const escape = (s: string) => s.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
/** A route path as test code writes it: each `{param}` any one path segment (a literal or `${expr}`). */
function pathPattern(path: string, quoted = false): RegExp {
  // A segment: one `${…}` expression, or literal text (no quote, slash, query or expression).
  const body = escape(path).replace(/\\?\{[^}]+\}/g, () => '(?:\\$\\{[^}]*\\}|[^/\'"`?${}]+)');
  return new RegExp(`${quoted ? '[\'"`]' : ''}${body}(?![\\w/-])`);
}

test('the path pattern matches a path as tests write it, and no longer path', (t) => {
  const p = pathPattern('/api/w/{wid}/agents/{aid}');
  t.true(p.test('call(url, "GET", `/api/w/${wid}/agents/${agent.id}`)'));
  t.true(p.test("'/api/w/ws_1/agents/agt_2'"));
  t.false(p.test('`/api/w/${wid}/agents/${id}/keys`'));
  t.false(p.test('`/api/w/${wid}/agents`'));
  const relative = pathPattern('/agents', true);
  t.true(relative.test("owner.get('/agents?limit=200')"));
  t.false(relative.test("owner.get('/agents-x')"));
});

test('every route has a test file naming its path under its domain’s test folder', async (t) => {
  const routes = server.table();
  t.true(routes.length > 100, 'the route table was read');
  const texts = new Map<string, string[]>();
  const testsOf = async (folder: string) => {
    if (!texts.has(folder)) {
      const files = await sources(`test/${folder}`).catch(() => [] as string[]);
      texts.set(folder, await Promise.all(files.map((f) => readFile(join(ROOT, f), 'utf8'))));
    }
    return texts.get(folder)!;
  };
  const missing: string[] = [];
  for (const route of routes) {
    const plugin = (route.realm.plugin ?? '').replace(/^svc-/, '');
    const folder = FOLDER_OF_PLUGIN[plugin] ?? plugin;
    const patterns = [pathPattern(route.path)];
    if (route.path.startsWith('/api/w/{wid}/'))
      patterns.push(pathPattern(route.path.slice('/api/w/{wid}'.length), true));
    const named = (await testsOf(folder)).some((text) => patterns.some((p) => p.test(text)));
    if (!named) missing.push(`${route.method.toUpperCase()} ${route.path} (test/${folder}/)`);
  }
  t.log(`${routes.length} routes; ${missing.length} without a test naming them under their domain's folder`);
  t.deepEqual(missing, []);
});
