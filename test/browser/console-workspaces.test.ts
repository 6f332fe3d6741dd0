import test from 'ava';
import type { Browser } from 'playwright-core';
import { makeBot } from '../approvals/support.js';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { call, csrf, signIn } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { DESKTOP, launch, personPage } from './support.js';

/**
 * A second workspace from the console: an owner names it under "New workspace" and the console
 * opens it, with the owner as its owner and the workspace picker offering both; the new one holds
 * nothing of the first. A person who owns no workspace is never offered it.
 */
let server: ServedInProcess;
let browser: Browser;
let owner: Person;

test.before(async () => {
  server = await serveInProcess();
  owner = await ownerConsole(server);
  browser = await launch();
});

test.after.always(async () => {
  await browser?.close();
  await stopAndClean(server);
});

test('an owner creates a second workspace in the console and lands in it', async (t) => {
  await makeBot(owner, 'first-bot', [{ actions: ['email'], domains: ['*'] }]);
  const p = await personPage(browser, server.url, owner.cookie, DESKTOP);
  try {
    await p.page.goto(`${server.url}/console?w=${owner.wid}`);
    await p.page.click('#new-workspace summary');
    // A refusal is shown under the form, in words.
    await p.page.fill('#new-workspace-name', ' ');
    await p.page.click('#new-workspace-form button[type=submit]');
    await p.page.locator('#new-workspace-error').waitFor({ state: 'visible' });
    t.regex(await p.page.locator('#new-workspace-error').innerText(), /name/i);

    await p.page.fill('#new-workspace-name', 'Research lab');
    await Promise.all([
      p.page.waitForURL(
        (url) => /^ws_/.test(url.searchParams.get('w') ?? '') && url.searchParams.get('w') !== owner.wid,
      ),
      p.page.click('#new-workspace-form button[type=submit]'),
    ]);
    const wid = new URL(p.page.url()).searchParams.get('w')!;
    t.not(wid, owner.wid);
    t.is(await p.page.locator('#role').innerText(), 'owner');
    const options = await p.page.locator('#workspace-select option').allInnerTexts();
    t.true(options.includes('Research lab'), options.join(', '));
    t.is(await p.page.locator('#workspace-select').inputValue(), wid);
    t.deepEqual(p.errors(), []);

    // The new workspace is the owner's own, and empty: the first one's agent is not in it.
    const agents = await call(server.url, 'GET', `/api/w/${wid}/agents`, { headers: { cookie: owner.cookie } });
    t.is(agents.status, 200, agents.text);
    t.deepEqual(agents.body.data, []);
    const records = await call(server.url, 'GET', `/api/w/${wid}/ledger`, { headers: { cookie: owner.cookie } });
    t.true(
      JSON.stringify(records.body).includes('workspace.created'),
      'the new workspace starts with the record of its making',
    );
  } finally {
    await p.close();
  }
});

test('a person who owns no workspace is not offered a new one, and the route refuses them', async (t) => {
  expectStatus(
    await owner.send('POST', '/members', {
      email: 'member@example.com',
      name: 'Member',
      role: 'admin',
      password: 'member password 1',
    }),
    201,
    'admin',
  );
  // Their own password first (one an admin chose must be replaced before anything else).
  const first = await signIn(server.url, 'member@example.com', 'member password 1');
  const changed = await call(server.url, 'PUT', '/api/me/password', {
    headers: { ...csrf, cookie: first },
    json: { currentPassword: 'member password 1', newPassword: 'their own password 2' },
  });
  t.is(changed.status, 200, changed.text);
  const cookie = await signIn(server.url, 'member@example.com', 'their own password 2');
  const p = await personPage(browser, server.url, cookie, DESKTOP);
  try {
    await p.page.goto(`${server.url}/console?w=${owner.wid}`);
    await p.page.locator('#role').waitFor();
    t.is(await p.page.locator('#new-workspace').count(), 0);
  } finally {
    await p.close();
  }
  const refused = await call(server.url, 'POST', '/api/workspaces', {
    headers: { ...csrf, cookie },
    json: { name: 'Mine' },
  });
  t.is(refused.status, 403, refused.text);
});
