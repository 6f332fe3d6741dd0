import test from 'ava';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, dirname, normalize } from 'node:path';
import { serviceTokenScopes } from '../../src/service-tokens/index.js';
import { PAY_ACME } from '../helpers/gate.js';
import { call, csrf, signIn } from '../helpers/http.js';
import { removeDir, ROOT, tempDir } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { anchors, curlExamples, localLinks, namedRoutes, pages } from './markdown.js';

/**
 * The README and docs/ (issue 21, item 5): a newcomer's documentation that cannot drift from the
 * product. Every link between the pages resolves to a file and a heading; every route a page
 * names is one the server's route table answers; and every curl example runs against a real
 * server, in page order, with its placeholders filled from a workspace made for the purpose
 * (a placeholder this test does not know fails it: an example must be runnable).
 */

const all = pages();

test('the README keeps the pitch, the two-command Quick start and a map of the features, and is short', (t) => {
  const readme = all.find((p) => p.path === 'README.md')!.text;
  t.true(readme.split('\n').length < 150, 'the reference lives in docs/, not in the README');
  t.regex(readme, /## Quick start\n/);
  t.regex(readme, /npm ci && npm start/);
  t.regex(readme, /\nnpm test\s/);
  t.regex(readme, /## What it does/);
  // Each page of docs/ is reached by a link from another page.
  const linked = new Set(
    all.flatMap((page) =>
      localLinks(page.text)
        .map((l) => l.replace(/#.*$/, ''))
        .filter((file) => file !== '')
        .map((file) => normalize(join(dirname(page.path), file)))
        .filter((target) => target !== page.path),
    ),
  );
  t.deepEqual(
    all.filter((p) => !p.path.startsWith('README') && !linked.has(p.path)).map((p) => p.path),
    [],
  );
});

test('every link between the pages resolves to a file and, where it names one, a heading', (t) => {
  const broken: string[] = [];
  for (const page of all) {
    for (const link of localLinks(page.text)) {
      const [file, anchor] = link.split('#') as [string, string | undefined];
      const target = file === '' ? page.path : normalize(join(dirname(page.path), file));
      if (!existsSync(join(ROOT, target))) {
        broken.push(`${page.path}: ${link} (no file ${target})`);
        continue;
      }
      if (anchor === undefined || !target.endsWith('.md')) continue;
      const text = all.find((p) => p.path === target)?.text;
      if (text !== undefined && !anchors(text).has(anchor)) broken.push(`${page.path}: ${link} (no heading)`);
    }
  }
  t.deepEqual(broken, []);
});

let server: ServedInProcess;
let vendor: MockVendor;
let scratch: string;

/** Whether the server's route table answers this method on this concrete path. */
const answers = (method: string, path: string) =>
  server.http.server.match(method as Parameters<typeof server.http.server.match>[0], path) !== null;

test.before(async () => {
  // Metrics are served when a scrape token is set; the pages name GET /metrics. The model
  // gateway's examples name these models, served by the mock vendor.
  vendor = await startMockVendor();
  const model = (id: string, provider: string, taskClasses = ['*']) => ({
    id,
    provider,
    upstreamModel: `${id}-2026`,
    priceMicrosPerMTokIn: 150_000,
    priceMicrosPerMTokOut: 600_000,
    jurisdiction: { domicile: 'US', region: 'us-east' },
    taskClasses,
  });
  server = await serveInProcess({
    env: {
      SVC_METRICS_TOKEN: 'docs-test-scrape-token-0123456789',
      VENDOR_O_KEY: 'sk-mock-openai',
      VENDOR_A_KEY: 'sk-mock-anthropic',
    },
    config: {
      gateway: {
        providers: [
          { id: 'vendor-a', kind: 'openai', baseUrl: vendor.openaiBase, apiKeyEnv: 'VENDOR_O_KEY' },
          { id: 'vendor-b', kind: 'anthropic', baseUrl: vendor.anthropicBase, apiKeyEnv: 'VENDOR_A_KEY' },
        ],
        models: [model('small', 'vendor-a'), model('embed', 'vendor-a', ['embedding']), model('claude-eu', 'vendor-b')],
      },
    },
  });
  scratch = await tempDir();
});

test.after.always(async () => {
  await server?.stop();
  await vendor?.close();
  if (scratch) await removeDir(scratch);
});

test('every route a page names is in the server route table', async (t) => {
  const missing: string[] = [];
  let named = 0;
  for (const page of all) {
    for (const route of namedRoutes(page.text)) {
      named++;
      for (const method of route.methods) {
        const found = route.candidates.some((path) => answers(method, path));
        if (!found) missing.push(`${page.path}: ${route.as} (${method})`);
      }
    }
  }
  t.true(named > 100, `the pages name the API's routes (${named})`);
  t.deepEqual(missing, []);
});

/** What a curl example needs, made once, lazily, through the API as an owner would. */
interface World {
  cookie: string;
  adminKey: string;
  agentKey: string;
  serviceToken: string;
  ids: Map<string, string>;
}

const NEW_PASSWORD = 'a long passphrase of the docs test';

test('every curl example runs against a real server, in page order, with its placeholders filled', async (t) => {
  const owner = server.boot.owner!;
  const wid = server.boot.workspaceId!;
  let password = owner.password;
  let world: World | undefined;
  const ids = new Map<string, string>();

  const makeWorld = async (): Promise<World> => {
    let cookie = await signIn(server.url, owner.email, password);
    if (password === owner.password) {
      const changed = await call(server.url, 'PUT', '/api/me/password', {
        headers: { ...csrf, cookie },
        json: { currentPassword: password, newPassword: NEW_PASSWORD },
      });
      if (changed.status !== 200) throw new Error(`password: ${changed.status}`);
      password = NEW_PASSWORD;
      cookie = await signIn(server.url, owner.email, password);
    }
    const headers = { ...csrf, cookie };
    const post = async (path: string, json: unknown) => {
      const res = await call(server.url, 'POST', `/api/w/${wid}${path}`, { headers, json });
      if (res.status !== 201 && res.status !== 200) throw new Error(`${path}: ${res.status} ${res.text}`);
      return res.body;
    };
    const admin = await post('/keys', { scope: 'admin', name: 'docs' });
    const template = await post('/templates', { name: 'pay-acme', rules: [PAY_ACME] });
    const blueprint = await post('/blueprints', { name: 'billing', tags: ['billing'], templates: [template.id] });
    await post('/members', { email: 'ops@acme.example', name: 'Ops', role: 'member' });
    const agent = await post('/agents', { name: 'billing-bot', blueprint: blueprint.id });
    const agentKey = await post(`/agents/${agent.id}/keys`, {});
    const token = await post('/service-tokens', { name: 'docs', scopes: [...serviceTokenScopes], expiresInDays: 1 });
    const known = new Map(ids);
    known.set('tpl', template.id);
    known.set('bp', blueprint.id);
    known.set('agt', agent.id);
    return { cookie, adminKey: admin.key, agentKey: agentKey.key, serviceToken: token.token, ids: known };
  };

  const host = server.url.replace(/^http:\/\//, '');
  const ran: string[] = [];
  for (const page of all) {
    for (const example of curlExamples(page.text)) {
      let command = example
        .replaceAll('http://127.0.0.1:8080', server.url)
        .replaceAll('http://localhost:8080', server.url)
        .replaceAll('localhost:8080', host)
        .replaceAll('<the printed one>', password)
        .replaceAll('<a long passphrase of your own>', NEW_PASSWORD);
      const needs = /\$(AGENT_KEY|SVC_TOKEN)|ask_…|[a-z]+_…/.test(command);
      if (needs) world ??= await makeWorld();
      const env: Record<string, string> = { PATH: process.env.PATH ?? '', SVC_URL: server.url };
      if (world) {
        env.AGENT_KEY = world.agentKey;
        env.SVC_TOKEN = world.serviceToken;
        command = command.replaceAll('ask_…', world.adminKey);
        for (const [prefix, id] of [...world.ids, ...ids]) command = command.replaceAll(`${prefix}_…`, id);
      }
      const left = /<[^>]*>|…/.exec(command.replace(/'<[^']*'/g, ''));
      if (left) {
        t.fail(`${page.path}: an example with a placeholder this test cannot fill (${left[0]}): ${example}`);
        continue;
      }
      const piped = /\|/.test(command.replace(/'[^']*'/g, ''));
      const script = piped ? command : command.replace(/^curl /, "curl -w '\\n%{http_code}' ");
      const { code, stdout, stderr } = await sh(script, env);
      ran.push(example);
      t.is(code, 0, `${page.path}: ${example}\n${stderr}`);
      if (!piped) {
        const status = Number(stdout.slice(stdout.lastIndexOf('\n') + 1));
        t.true(status >= 200 && status < 300, `${page.path}: ${example} answered ${status}: ${stdout}`);
        const body = stdout.slice(0, stdout.lastIndexOf('\n'));
        for (const m of body.matchAll(/"id":"([a-z]+)_([0-9A-Za-z]+)"/g)) ids.set(m[1]!, `${m[1]}_${m[2]}`);
        if (world) for (const [k, v] of ids) world.ids.set(k, v);
        if (command.includes('/api/me/password') && status === 200) password = NEW_PASSWORD;
      } else t.true(stdout.trim().length > 0, `${page.path}: ${example} printed nothing`);
    }
  }
  t.true(ran.length >= 8, `the pages hold curl examples (${ran.length})`);
});

function sh(script: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      'bash',
      ['--norc', '--noprofile', '-o', 'pipefail', '-c', script],
      { cwd: scratch, env, timeout: 20_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

test('the checks see a route the server does not answer, a shortened route, and a heading that is not there', (t) => {
  const routes = namedRoutes('| `GET/POST /api/w/{wid}/webhooks`, `DELETE …/{id}`, `POST /v1/nowhere` |');
  t.deepEqual(
    routes.map((r) => r.as),
    ['GET/POST /api/w/{wid}/webhooks', 'DELETE …/{id}', 'POST /v1/nowhere'],
  );
  const answered = (r: (typeof routes)[number], method: string) => r.candidates.some((path) => answers(method, path));
  t.true(answered(routes[0]!, 'GET') && answered(routes[0]!, 'POST'));
  t.true(answered(routes[1]!, 'DELETE'));
  t.false(answered(routes[2]!, 'POST'));
  t.true(anchors('# Model gateway\n## When the disk fills').has('when-the-disk-fills'));
  t.false(anchors('```sh\n# not a heading\n```').has('not-a-heading'));
});
