import test from 'ava';
import { Script } from 'node:vm';
import { expectStatus } from '../helpers/console.js';
import { call, csrf, ownerSession, signIn, type Reply } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { withStore } from '../helpers/store.js';

/**
 * The web console's pages over a real listening server (issue 4, item 4; "Web pages,
 * server-rendered, same origin"): who gets which page, the headers every page carries, the
 * assets' types, and that everything rendered on the server from a person's data is escaped.
 * What the page script does is the browser test's (test/browser/console.test.ts).
 */

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
const EVIL_WORKSPACE = '<script>alert("ws")</script> & Co';
const EVIL_NAME = '<img src=x onerror="alert(1)">';
const EVIL_EMAIL = 'mallory@evil.example';
const EVIL_PASSWORD = 'mallory-password-1';

let server: ServedInProcess;
let owner: string;
let evil: { workspaceId: string; cookie: string };

test.before(async () => {
  // Every test here signs in; a generous per-address budget keeps them from waiting on each other.
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '200' } });
  owner = await ownerSession(server);
  const made = await withStore(server.dataDir, (app) =>
    app.services.people.createWorkspace({
      name: EVIL_WORKSPACE,
      ownerEmail: EVIL_EMAIL,
      ownerName: EVIL_NAME,
      ownerPassword: EVIL_PASSWORD,
    }),
  );
  evil = { workspaceId: made.workspaceId, cookie: await signIn(server.url, EVIL_EMAIL, EVIL_PASSWORD) };
});

test.after.always(() => stopAndClean(server));

const page = (path: string, cookie?: string) => call(server.url, 'GET', path, cookie ? { headers: { cookie } } : {});

/** The headers every console page carries: its own CSP, and the front door's for documents. */
function assertPageHeaders(t: import('ava').ExecutionContext, res: Reply, what: string): void {
  t.is(res.status, 200, `${what}: ${res.text.slice(0, 300)}`);
  t.is(res.headers['content-type'], 'text/html; charset=utf-8', what);
  t.is(res.headers['content-security-policy'], CSP, what);
  t.is(res.headers['x-frame-options'], 'DENY', what);
  t.is(res.headers['referrer-policy'], 'no-referrer', what);
  t.is(res.headers['x-content-type-options'], 'nosniff', what);
  t.is(res.headers['cache-control'], 'no-store', what);
}

/** Nothing a strict CSP would refuse: no inline script, style or handler; only our two files. */
function assertNoInlineCode(t: import('ava').ExecutionContext, html: string, what: string): void {
  const scripts = [...html.matchAll(/<script\b([^>]*)>/gi)].map((m) => m[1]!);
  t.deepEqual(
    scripts.map((a) => /\bsrc="([^"]+)"/.exec(a)?.[1]),
    ['/console/app.js'],
    `${what}: one script, from this origin`,
  );
  t.deepEqual(
    [...html.matchAll(/<link\b[^>]*rel="stylesheet"[^>]*href="([^"]+)"/gi)].map((m) => m[1]),
    ['/console/app.css'],
    what,
  );
  t.notRegex(html, /<style\b/i, what);
  t.notRegex(html, /\sstyle\s*=/i, what);
  t.notRegex(html, /<[^>]*\son[a-z]+\s*=/i, `${what}: no inline event handlers`);
  t.notRegex(html, /(?:src|href|action)="(?:[a-z]+:)?\/\//i, `${what}: nothing from another origin`);
}

test('GET /login: the sign-in form, with its two-factor field, under a strict CSP; no session needed', async (t) => {
  const res = await page('/login');
  assertPageHeaders(t, res, '/login');
  assertNoInlineCode(t, res.text, '/login');
  t.regex(res.text, /<form id="signin"/);
  t.regex(res.text, /<input id="email" name="email" type="email"/);
  t.regex(res.text, /<input id="password" name="password" type="password"/);
  t.regex(res.text, /<div id="totp-row" hidden>/, 'the code field waits for 401 totp_required');
  t.regex(res.text, /<input id="totp" name="totp"/);
  t.regex(res.text, /<body data-page="login"/);
});

test('GET /login answers the same to a signed-in person (it needs no session)', async (t) => {
  const res = await page('/login', owner);
  assertPageHeaders(t, res, '/login signed in');
});

test('GET /console without a session, or with an unknown one, redirects to /login', async (t) => {
  for (const cookie of [undefined, 'sid=not-a-sealed-cookie', 'sid=Fe26.2**0**abc**def**ghi**jkl**mno']) {
    const res = await page('/console', cookie);
    t.is(res.status, 302, String(cookie));
    t.is(res.headers.location, '/login', String(cookie));
  }
});

test('GET /console after signing out redirects to /login', async (t) => {
  const cookie = await signIn(server.url, EVIL_EMAIL, EVIL_PASSWORD);
  t.is((await page('/console', cookie)).status, 200);
  expectStatus(await call(server.url, 'DELETE', '/api/session', { headers: { cookie, ...csrf } }), 200, 'sign out');
  const res = await page('/console', cookie);
  t.is(res.status, 302);
  t.is(res.headers.location, '/login');
});

test('GET /console with a session: the workspace shell for the script, under the same headers', async (t) => {
  const res = await page('/console', owner);
  assertPageHeaders(t, res, '/console');
  assertNoInlineCode(t, res.text, '/console');
  const wid = server.boot.workspaceId!;
  t.regex(
    res.text,
    new RegExp(
      `<body data-page="console" class="page-console" data-user="usr_[0-9A-Za-z]{22}" data-workspace="${wid}" data-can-decide="true" data-can-stop-all="true" data-can-read-members="true" data-can-manage-agents="true" data-can-manage-all-agents="true" data-section="overview">`,
    ),
  );
  t.regex(res.text, /<span class="workspace" id="workspace-name">Default<\/span>/);
  t.regex(res.text, /<span class="badge badge-neutral" id="role">owner<\/span>/);
  for (const id of ['stop-all-body', 'approvals-body', 'agents-body', 'sign-out', 'refresh', 'error', 'status']) {
    t.regex(res.text, new RegExp(`id="${id}"`), id);
  }
  // The sections' navigation, the overview marked as the page shown, every link keeping ?w=.
  const nav =
    /<nav class="sections-nav" aria-label="Console sections"><ul>(.*?)<\/ul><\/nav>/.exec(res.text)?.[1] ?? '';
  const links = [...nav.matchAll(/<a href="([^"]+)" data-nav="([a-z-]+)"( aria-current="page")?>/g)];
  t.true(links.length >= 1, nav);
  t.deepEqual(links[0]!.slice(1), [`/console?w=${wid}`, 'overview', ' aria-current="page"']);
  for (const link of links.slice(1)) {
    t.is(link[1], `/console/${link[2]}?w=${wid}`);
    t.is(link[3], undefined, `${link[2]} is not the page shown`);
  }
});

test('GET /console/{section}: every section is its page, under the same headers, its nav link current', async (t) => {
  const wid = server.boot.workspaceId!;
  for (const section of ['agents', 'approvals', 'keys', 'members']) {
    const res = await page(`/console/${section}?w=${wid}`, owner);
    assertPageHeaders(t, res, section);
    assertNoInlineCode(t, res.text, section);
    t.regex(res.text, new RegExp(`data-section="${section}">`), section);
    t.regex(
      res.text,
      new RegExp(`<a href="/console/${section}\\?w=${wid}" data-nav="${section}" aria-current="page">`),
    );
    t.is([...res.text.matchAll(/aria-current="page"/g)].length, 1, section);
    t.regex(res.text, new RegExp(`action="/console/${section}"|id="workspace-name"`), section);
  }
});

test('GET /console/{section}: an unknown one is 404, /console/overview is /console, no session goes to /login', async (t) => {
  const unknown = await page('/console/nonsense', owner);
  t.is(unknown.status, 404);
  t.is(unknown.body.error.type, 'not_found');
  t.regex(unknown.body.error.message, /no section "nonsense"/);
  const wid = server.boot.workspaceId!;
  const overview = await page(`/console/overview?w=${wid}`, owner);
  t.is(overview.status, 302);
  t.is(overview.headers.location, `/console?w=${wid}`);
  const anonymous = await page('/console/agents');
  t.is(anonymous.status, 302);
  t.is(anonymous.headers.location, '/login');
  t.is((await page('/console/%3Cscript%3E', owner)).status, 400);
});

// Serial: the next test gives this person a second workspace.
test.serial('GET /console escapes the workspace and person names it renders on the server', async (t) => {
  const res = await page('/console', evil.cookie);
  assertPageHeaders(t, res, '/console (hostile names)');
  assertNoInlineCode(t, res.text, '/console (hostile names)');
  t.false(res.text.includes(EVIL_WORKSPACE));
  t.false(res.text.includes('<script>alert'));
  t.false(res.text.includes(EVIL_NAME));
  t.false(res.text.includes('<img'));
  const workspace = '&lt;script&gt;alert(&quot;ws&quot;)&lt;/script&gt; &amp; Co';
  t.true(res.text.includes(`<span class="workspace" id="workspace-name">${workspace}</span>`));
  t.true(res.text.includes(`<title>${workspace} · svc console</title>`));
  t.true(
    res.text.includes(
      '<span class="person" title="mallory@evil.example">&lt;img src=x onerror=&quot;alert(1)&quot;&gt; <span class="muted">mallory@evil.example</span></span>',
    ),
  );
});

test.serial('GET /console with several workspaces: a selector of escaped names, ?w= picks one', async (t) => {
  // The first-start owner adds the hostile-named person to "Default": now they have two.
  const ownerWid = server.boot.workspaceId!;
  expectStatus(
    await call(server.url, 'POST', `/api/w/${ownerWid}/members`, {
      headers: { cookie: owner, ...csrf },
      json: { email: EVIL_EMAIL, name: 'ignored for an existing person', role: 'analyst' },
    }),
    201,
    'add member',
  );
  const first = await page('/console', evil.cookie);
  assertPageHeaders(t, first, '/console (two workspaces)');
  const options = [...first.text.matchAll(/<option value="(ws_[0-9A-Za-z]{22})"( selected)?>([^<]*)<\/option>/g)].map(
    (m) => ({ id: m[1], selected: m[2] !== undefined, name: m[3] }),
  );
  // Without ?w=, the first of GET /api/me's workspaces is shown.
  const me = expectStatus(
    await call(server.url, 'GET', '/api/me', { headers: { cookie: evil.cookie } }),
    200,
    'me',
  ).body;
  t.deepEqual(
    options.map((o) => o.id),
    me.workspaces.map((w: { id: string }) => w.id),
  );
  t.deepEqual(
    options.map((o) => o.selected),
    [true, false],
  );
  t.deepEqual(
    options.find((o) => o.id === evil.workspaceId)?.name,
    '&lt;script&gt;alert(&quot;ws&quot;)&lt;/script&gt; &amp; Co',
  );
  t.deepEqual(options.find((o) => o.id === ownerWid)?.name, 'Default');
  t.regex(first.text, /<form id="workspace-form" class="workspace-form" method="get" action="\/console">/);

  // ?w= opens either, with what the role there offers: an analyst reads no approvals.
  const own = await page(`/console?w=${evil.workspaceId}`, evil.cookie);
  t.regex(own.text, new RegExp(`data-workspace="${evil.workspaceId}" data-can-decide="true"`));
  const second = await page(`/console?w=${ownerWid}`, evil.cookie);
  t.is(second.status, 200);
  t.regex(
    second.text,
    new RegExp(
      `data-workspace="${ownerWid}" data-can-decide="false" data-can-stop-all="false" data-can-read-members="false"`,
    ),
  );
  t.regex(second.text, /<option value="ws_[0-9A-Za-z]{22}" selected>Default<\/option>/);
  t.regex(second.text, /id="role">analyst</);
  t.false(second.text.includes('id="approvals-body"'), 'no approvals section for an analyst');
  t.true(second.text.includes('id="agents-body"'));

  // A workspace id that is not theirs shows their first; a malformed one is a bad request.
  const foreign = await page('/console?w=ws_AAAAAAAAAAAAAAAAAAAAAA', evil.cookie);
  t.is(foreign.status, 200);
  t.regex(foreign.text, new RegExp(`data-workspace="${options[0]!.id}"`));
  const malformed = await page('/console?w=%3Cscript%3E', evil.cookie);
  t.is(malformed.status, 400);
  t.is(malformed.body.error.type, 'invalid_request');
});

test('GET /console for a person still holding a one-time password: only the change-password form', async (t) => {
  const email = 'newcomer@example.test';
  const password = 'one-time-password-1';
  await withStore(server.dataDir, (app) =>
    app.services.people.createWorkspace({
      name: 'Newcomer',
      ownerEmail: email,
      ownerPassword: password,
      mustChangePassword: true,
    }),
  );
  const cookie = await signIn(server.url, email, password);
  const res = await page('/console', cookie);
  assertPageHeaders(t, res, '/console (one-time password)');
  t.regex(res.text, /<form id="change-password"/);
  t.false(res.text.includes('data-workspace='), 'the script gets no workspace to load');
  t.false(res.text.includes('id="agents-body"'));
});

test('GET /console/app.js and /console/app.css: their content types, no session needed, valid script', async (t) => {
  const js = await page('/console/app.js');
  t.is(js.status, 200);
  t.is(js.headers['content-type'], 'text/javascript; charset=utf-8');
  t.is(js.headers['x-content-type-options'], 'nosniff');
  t.notThrows(() => new Script(js.text, { filename: 'app.js' }), 'the page script parses');
  t.notRegex(
    js.text,
    /innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/,
    'data never becomes markup or code',
  );
  // The bundle (esbuild) writes the header's name and value in double quotes.
  t.regex(js.text, /\[["']x-svc-csrf["']\] = ["']1["']/);

  const css = await page('/console/app.css');
  t.is(css.status, 200);
  t.is(css.headers['content-type'], 'text/css; charset=utf-8');
  t.is(css.headers['x-content-type-options'], 'nosniff');
  t.regex(css.text, /font: 15px\/1\.5 system-ui/);
  t.notRegex(css.text, /@import|url\(/, 'the stylesheet loads nothing more');
});

test('HEAD /login answers like GET without a body', async (t) => {
  const res = await call(server.url, 'HEAD', '/login');
  t.is(res.status, 200);
  t.is(res.headers['content-security-policy'], CSP);
  t.is(res.text, '');
});
