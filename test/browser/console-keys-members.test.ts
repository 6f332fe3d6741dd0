/// <reference lib="dom" />
import test from 'ava';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Secret, TOTP } from 'otpauth';
import type { Browser } from 'playwright-core';
import { consoleClient, expectStatus, type Person } from '../helpers/console.js';
import { bearer, call, csrf, ownerSession, signIn } from '../helpers/http.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { stopAndClean } from '../helpers/process.js';
import { withStore } from '../helpers/store.js';
import {
  ARTIFACTS,
  assertReachable,
  DESKTOP,
  launch,
  navigation,
  PHONE,
  personPage,
  screenshot,
  type PersonPage,
} from './support.js';

/**
 * The keys and members sections, /console/keys and /console/members (issue 21 item 4), in
 * Debian's chromium at desktop and phone widths: an owner mints a workspace key and creates a
 * service token (each shown once, and working), revokes them (refused from then on); sees who has
 * two-factor on and who is locked out, lifts a lockout, adds a person, changes a role, removes a
 * person; an admin is offered nothing on an owner and no service tokens; a member gets neither
 * section. Hostile names are text. Screenshots: test/artifacts/console-{keys,members}-{desktop,phone}.png.
 */

const HOSTILE = '<img src=x onerror="window.__pwned=1"><b>Eve</b>';

let server: ServedInProcess;
let browser: Browser;
let owner: Person;
let admin: Person;
let member: Person;
let hostileId: string;
let lockedId: string;
let twoFactorId: string;
const pages: PersonPage[] = [];

/** A person added to the workspace in the store, signed in with their own password. */
async function person(email: string, name: string, role: 'admin' | 'member'): Promise<Person> {
  const password = `${role}-password-1`;
  const user = await withStore(server.dataDir, (app) =>
    app.services.people.addMember({ workspaceId: server.boot.workspaceId!, email, name, password, role }),
  );
  return { ...consoleClient(server, server.boot.workspaceId!, await signIn(server.url, email, password)), id: user.id };
}

const cookieOf = (res: { headers: Record<string, unknown> }) =>
  String([res.headers['set-cookie']].flat()[0]).split(';')[0]!;

test.before(async () => {
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '100' } });
  owner = { ...consoleClient(server, server.boot.workspaceId!, await ownerSession(server)), id: '' };
  owner.id = await owner.userId();
  admin = await person('ada@example.test', 'Ada', 'admin');
  member = await person('mia@example.test', 'Mia', 'member');
  hostileId = (await person('eve@example.test', HOSTILE, 'member')).id;

  // Locked out: five wrong current passwords in a row.
  const locked = await person('lou@example.test', 'Lou', 'member');
  lockedId = locked.id;
  for (let i = 0; i < 5; i += 1) {
    await call(server.url, 'PUT', '/api/me/password', {
      headers: { cookie: locked.cookie, ...csrf },
      json: { currentPassword: `wrong-password-${i}`, newPassword: 'a-new-password-1' },
    });
  }
  // Two-factor on: the person replaces the password the store gave them, then enrols.
  const tf = await person('tom@example.test', 'Tom', 'member');
  twoFactorId = tf.id;
  const replaced = expectStatus(
    await call(server.url, 'PUT', '/api/me/password', {
      headers: { cookie: tf.cookie, ...csrf },
      json: { currentPassword: 'member-password-1', newPassword: 'toms-own-password-1' },
    }),
    200,
    'password',
  );
  const session = cookieOf(replaced);
  const started = expectStatus(
    await call(server.url, 'POST', '/api/me/totp', { headers: { cookie: session, ...csrf }, json: {} }),
    200,
    'totp',
  );
  const totp = new TOTP({ secret: Secret.fromBase32(started.body.secret), digits: 6, period: 30, algorithm: 'SHA1' });
  expectStatus(
    await call(server.url, 'POST', '/api/me/totp/confirm', {
      headers: { cookie: session, ...csrf },
      json: { code: totp.generate() },
    }),
    200,
    'totp confirm',
  );
  browser = await launch();
});

test.after.always(async () => {
  for (const p of pages) await p.close();
  await browser?.close();
  await stopAndClean(server);
});

async function open(cookie: string, viewport: typeof DESKTOP, section: string): Promise<PersonPage> {
  const p = await personPage(browser, server.url, cookie, viewport);
  pages.push(p);
  await p.page.goto(`${server.url}/console/${section}?w=${server.boot.workspaceId!}`);
  return p;
}

test.serial(
  'an owner mints a key and creates a service token, each shown once and working, then revokes them',
  async (t) => {
    t.timeout(120_000);
    const { page, errors } = await open(owner.cookie, DESKTOP, 'keys');
    t.is((await navigation(page)).current, 'Keys');
    await page.locator('#keys-body .empty').waitFor();

    await page.click('#key-new-submit');
    t.is(
      await page.locator('#key-new-error').textContent(),
      'Name the key after what uses it: the ledger and the usage reports show it.',
    );
    await page.fill('#key-new-name', 'reporting-job');
    await page.selectOption('#key-new-scope', 'inference');
    await page.click('#key-new-submit');
    const keySecret = page.locator('#keys-secret .secret');
    await keySecret.waitFor();
    const key = await keySecret.locator('input').inputValue();
    t.regex(key, /^ask_/);
    const whoami = expectStatus(
      await call(server.url, 'GET', '/v1/whoami', { headers: bearer(key) }),
      200,
      'whoami',
    ).body;
    t.like(whoami, { scope: 'inference', name: 'reporting-job' });
    const keyRow = page.locator(`tr[data-key="${whoami.id}"]`);
    await keyRow.waitFor();
    t.true((await keyRow.innerText()).includes('reporting-job'));

    // A service token: scopes chosen, shown once, and it reads the agents.
    await page.fill('#token-new-name', 'ci-deploy');
    await page.click('#token-new-submit');
    t.is(await page.locator('#token-new-error').textContent(), 'Choose at least one scope.');
    await page.check('input[name=token-scope][value="agents:read"]');
    await page.fill('#token-new-days', '7');
    await page.click('#token-new-submit');
    const tokenSecret = page.locator('#tokens-secret .secret');
    await tokenSecret.waitFor();
    const token = await tokenSecret.locator('input').inputValue();
    t.regex(token, /^ims_/);
    t.is((await call(server.url, 'GET', '/v1/admin/agents', { headers: bearer(token) })).status, 200);
    const tokenRow = page.locator('#tokens-body tr', { hasText: 'ci-deploy' });
    await tokenRow.waitFor();
    t.true((await tokenRow.innerText()).includes('agents:read'));
    await screenshot(page, 'console-keys-desktop.png');
    t.true(existsSync(join(ARTIFACTS, 'console-keys-desktop.png')));

    // Dismissed, the values are nowhere in the page; revoked, they are refused.
    await keySecret.getByRole('button', { name: 'Done' }).click();
    await tokenSecret.getByRole('button', { name: 'Done' }).click();
    const html = await page.content();
    t.false(html.includes(key) || html.includes(token));
    await keyRow.getByRole('button', { name: 'Revoke' }).click();
    await keyRow.getByRole('button', { name: 'Revoke key' }).click();
    await keyRow.waitFor({ state: 'detached' });
    t.is(await page.locator('#status').textContent(), 'Key revoked: reporting-job');
    t.is((await call(server.url, 'GET', '/v1/whoami', { headers: bearer(key) })).status, 401);
    await page.check('#keys-show-revoked');
    t.is(await page.locator(`tr[data-key="${whoami.id}"] .badge`, { hasText: 'Revoked' }).count(), 1);
    await tokenRow.getByRole('button', { name: 'Revoke' }).click();
    await tokenRow.getByRole('button', { name: 'Revoke token' }).click();
    await page.locator('#tokens-body .empty').waitFor();
    t.is((await call(server.url, 'GET', '/v1/admin/agents', { headers: bearer(token) })).status, 401);
    t.deepEqual(errors(), []);
  },
);

test.serial(
  'an owner sees two-factor and lockouts, lifts a lockout, adds a person, changes a role, removes one',
  async (t) => {
    t.timeout(120_000);
    const { page, errors } = await open(owner.cookie, DESKTOP, 'members');
    const row = (id: string) => page.locator(`tr[data-member="${id}"]`);
    await row(owner.id).waitFor();
    t.is(await row(twoFactorId).locator('td[data-label="Two-factor"]').textContent(), 'On');
    t.is(await row(member.id).locator('td[data-label="Two-factor"]').textContent(), 'Off');
    t.is(await row(hostileId).locator('.agent-name').textContent(), HOSTILE);
    t.is(await page.locator('#members-body img, #members-body b').count(), 0);
    t.true((await row(owner.id).innerText()).includes('(you)'));

    // The lockout, shown and lifted.
    t.true((await row(lockedId).innerText()).includes('Locked out'));
    t.is(await row(owner.id).getByRole('button', { name: 'Lift lockout' }).count(), 0);
    await screenshot(page, 'console-members-desktop.png');
    t.true(existsSync(join(ARTIFACTS, 'console-members-desktop.png')));
    await row(lockedId).getByRole('button', { name: 'Lift lockout' }).click();
    await page.locator('#status', { hasText: 'Lockout lifted: Lou' }).waitFor();
    await row(lockedId).locator('.locked').waitFor({ state: 'detached' });
    const listed = expectStatus(await owner.get('/members?limit=200'), 200, 'members').body.data;
    t.is(listed.find((m: { id: string }) => m.id === lockedId).lockedUntil, null);

    // Add a person.
    await page.fill('#member-new-email', 'nia@example.test');
    await page.fill('#member-new-name', 'Nia');
    await page.selectOption('#member-new-role', 'analyst');
    await page.fill('#member-new-password', 'a-one-time-password-1');
    await page.click('#member-new-submit');
    await page.locator('#status', { hasText: 'Added: Nia as analyst.' }).waitFor();
    const nia = expectStatus(await owner.get('/members?limit=200'), 200, 'members').body.data.find(
      (m: { email: string }) => m.email === 'nia@example.test',
    );
    t.like(nia, { name: 'Nia', role: 'analyst' });
    await row(nia.id).waitFor();

    // Change Mia's role.
    await row(member.id).getByRole('combobox').selectOption('auditor');
    await row(member.id).getByRole('button', { name: 'Change role' }).click();
    await page.locator('#status', { hasText: 'Mia is now auditor.' }).waitFor();
    t.is(
      expectStatus(await owner.get('/members?limit=200'), 200, 'members').body.data.find(
        (m: { id: string }) => m.id === member.id,
      ).role,
      'auditor',
    );

    // Remove Nia, asked twice; her sessions end.
    await row(nia.id).getByRole('button', { name: 'Remove' }).click();
    await row(nia.id).getByRole('button', { name: 'Remove Nia' }).click();
    await row(nia.id).waitFor({ state: 'detached' });
    t.is(await page.locator('#status').textContent(), 'Removed: Nia. Their sessions ended.');
    t.is(await page.evaluate('typeof window.__pwned'), 'undefined');
    t.deepEqual(errors(), []);
  },
);

test.serial(
  'an admin at 390 px: nothing offered on an owner, no owner role, no service tokens; every control on the screen',
  async (t) => {
    t.timeout(120_000);
    const members = await open(admin.cookie, PHONE, 'members');
    const page = members.page;
    await page.locator(`tr[data-member="${owner.id}"]`).waitFor();
    const ownerRow = page.locator(`tr[data-member="${owner.id}"]`);
    t.is(await ownerRow.getByRole('button').count(), 0);
    t.is(await ownerRow.getByRole('combobox').count(), 0);
    const hostileRow = page.locator(`tr[data-member="${hostileId}"]`);
    t.deepEqual(await hostileRow.locator('select option').allTextContents(), ['admin', 'member', 'analyst', 'auditor']);
    t.deepEqual(await page.locator('#member-new-role option').allTextContents(), [
      'admin',
      'member',
      'analyst',
      'auditor',
    ]);
    await assertReachable(t, hostileRow.getByRole('combobox'), 'the role');
    await assertReachable(t, hostileRow.getByRole('button', { name: 'Remove' }), 'Remove');
    await assertReachable(t, page.locator('#member-new-submit'), 'Add person');
    await screenshot(page, 'console-members-phone.png');
    t.true(existsSync(join(ARTIFACTS, 'console-members-phone.png')));

    const keys = await open(admin.cookie, PHONE, 'keys');
    await keys.page.locator('#keys-body').waitFor();
    t.is(await keys.page.locator('#service-tokens').count(), 0, "service tokens are an owner's");
    await keys.page.fill('#key-new-name', 'admin-made');
    await keys.page.click('#key-new-submit');
    await keys.page.locator('#keys-secret .secret').waitFor();
    await assertReachable(t, keys.page.locator('#keys-secret').getByRole('button', { name: 'Copy' }), 'Copy');
    const row = keys.page.locator('#keys-body tr', { hasText: 'admin-made' });
    await assertReachable(t, row.getByRole('button', { name: 'Revoke' }), 'Revoke');
    await screenshot(keys.page, 'console-keys-phone.png');
    t.true(existsSync(join(ARTIFACTS, 'console-keys-phone.png')));
    t.deepEqual([...members.errors(), ...keys.errors()], []);
  },
);

test.serial('a member gets neither section: not in the navigation, and the page says so with 403', async (t) => {
  t.timeout(60_000);
  const p = await open(member.cookie, DESKTOP, 'members');
  // Mia is an auditor now (the owner changed her role above).
  t.is(p.page.url().includes('/console/members'), true);
  // An auditor reads the ledger too.
  t.deepEqual((await navigation(p.page)).labels, [
    'Overview',
    'Agents',
    'Templates',
    'Blueprints',
    'Ledger',
    'Your account',
  ]);
  t.true((await p.page.locator('#not-for-role').innerText()).includes('does not open this section'));
  for (const section of ['keys', 'members']) {
    const res = await call(server.url, 'GET', `/console/${section}`, { headers: { cookie: member.cookie } });
    t.is(res.status, 403, section);
    t.false(res.text.includes('data-section='), 'no section script runs');
  }
  t.deepEqual(p.errors(), []);
});
