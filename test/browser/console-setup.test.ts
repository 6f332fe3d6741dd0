import test from 'ava';
import { existsSync } from 'node:fs';
import { Secret, TOTP } from 'otpauth';
import type { Browser } from 'playwright-core';
import { consoleClient, ownerConsole, type Person } from '../helpers/console.js';
import { call, csrf, signIn } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { withStore } from '../helpers/store.js';
import { clipped, launch, screenshot, signedInPage, WIDTHS, type Width } from './reports-support.js';

/**
 * The setup pages in a real browser (issue 37, part 1), over a real server: templates (the rule
 * editor, amounts typed in the currency's units, stored in minor units, the preview, the field
 * problems), blueprints (templates ticked, tags), and your account (the password changed with
 * plain-sentence errors, two-factor turned on with the QR code and confirmed, recovery codes shown
 * once and replaced, two-factor off, sessions listed and ended). Every write lands in the API's
 * store and ledger as the API's own routes write it; a role that cannot write sees no form.
 */
let server: ServedInProcess;
let browser: Browser;
let owner: Person;

async function personIn(role: 'member' | 'auditor' | 'admin', email: string, password: string): Promise<Person> {
  const wid = server.boot.workspaceId!;
  const user = await withStore(server.dataDir, (app) =>
    app.services.people.addMember({ workspaceId: wid, email, name: `The ${role}`, password, role }),
  );
  return { ...consoleClient(server, wid, await signIn(server.url, email, password)), id: user.id };
}

test.before(async () => {
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '1000' } });
  owner = await ownerConsole(server);
  browser = await launch();
});

test.after.always(async () => {
  await browser?.close();
  await stopAndClean(server);
});

const url = (section: string) => `${server.url}/console/${section}?w=${owner.wid}`;

test.serial('templates: the editor sends minor units, previews the rule, and names what is wrong', async (t) => {
  t.timeout(60_000);
  const { page, problems, close } = await signedInPage(browser, server.url, owner.cookie, 'desktop');
  try {
    t.is((await page.goto(url('templates')))?.status(), 200);
    await page.locator('#templates-empty').waitFor();
    await page.fill('#template-name', 'Yen and dinars');
    // A euro amount with three decimals is refused beside the field, in words.
    await page.fill('#rule-0-maxAmount', '20.001');
    t.is(
      await page.locator('#rule-0-maxAmount-problem').textContent(),
      'EUR has 2 decimals: write at most 2 after the point.',
    );
    await page.fill('#rule-0-currency', 'JPY');
    await page.fill('#rule-0-maxAmount', '5000');
    await page.fill('#rule-0-approvalAbove', '1,000');
    await page.fill('#rule-0-merchants', 'shop.example');
    t.true(await page.locator('#rule-0-maxAmount-problem').isHidden());
    t.is(
      await page.locator('#rule-0-preview').textContent(),
      'Payments up to JPY 5,000 each to merchant shop.example; a person approves above JPY 1,000.',
    );
    await page.click('#template-add-rule');
    await page.fill('#rule-1-actions', 'refund');
    await page.fill('#rule-1-merchants', '*');
    await page.fill('#rule-1-currency', 'KWD');
    await page.fill('#rule-1-periodAmount', '12.5');
    await page.selectOption('#rule-1-period', 'month');
    t.is(
      await page.locator('#rule-1-preview').textContent(),
      'Refunds of any amount in KWD to any merchant; at most KWD 12.500 a month.',
    );
    await page.click('#template-save');
    const item = page.locator('li[data-template]');
    await item.waitFor();
    const stored = (await owner.get('/templates')).body.data;
    t.is(stored.length, 1);
    t.like(stored[0].rules[0], {
      actions: ['payment'],
      merchants: ['shop.example'],
      currencies: ['JPY'],
      maxAmount: 5000,
      approval: { above: 1000 },
    });
    t.like(stored[0].rules[1], { currencies: ['KWD'], periodLimit: { amount: 12500, period: 'month' } });
    t.true((await item.innerText()).includes('at most KWD 12.500 a month'));
    const recorded = (await owner.ledger()).filter((r) => r.kind === 'template.created');
    t.is(recorded.length, 1);
    t.is(recorded[0]!.actor, `user:${owner.id}`);
    t.true(existsSync(await screenshot(page, 'console-templates-desktop')));
    t.deepEqual(problems, []);
  } finally {
    await close();
  }
});

test.serial(
  "templates and blueprints: the API's refusal reads as a sentence; a member reads without forms",
  async (t) => {
    t.timeout(60_000);
    const member = await personIn('member', 'member@setup.example', 'member password 1');
    const { page, problems, close } = await signedInPage(browser, server.url, owner.cookie, 'desktop');
    try {
      await page.goto(url('templates'));
      await page.locator('li[data-template]').waitFor();
      await page.fill('#template-name', 'Bad merchant');
      await page.fill('#rule-0-actions', 'pay');
      await page.click('#template-save');
      const error = page.locator('#template-error');
      await error.waitFor();
      const text = (await error.textContent()) ?? '';
      t.notRegex(text, /^"|"rules\[/, text);
      t.regex(text, /^The actions \(rule 1\) "pay" is not a built-in type .*\.$/, text);
      // Chrome logs the refused write's 400 as a failed resource; nothing else went wrong.
      t.deepEqual(
        problems.filter((p) => !p.includes('status of 400')),
        [],
      );
    } finally {
      await close();
    }
    const seen = await signedInPage(browser, server.url, member.cookie, 'phone');
    try {
      for (const section of ['templates', 'blueprints']) {
        t.is((await seen.page.goto(url(section)))?.status(), 200, section);
        await seen.page.locator(`#${section}-count`).waitFor({ state: 'attached' });
        t.is(await seen.page.locator('form').count(), 0, `${section}: no form for a member`);
      }
      await seen.page.goto(url('templates'));
      await seen.page.locator('li[data-template]').waitFor();
      t.deepEqual(await clipped(seen.page, 'li[data-template], nav a'), []);
      t.deepEqual(seen.problems, []);
    } finally {
      await seen.close();
    }
  },
);

for (const width of Object.keys(WIDTHS) as Width[]) {
  test.serial(`${width}: blueprints are created from ticked templates and tags`, async (t) => {
    t.timeout(60_000);
    const { page, problems, close } = await signedInPage(browser, server.url, owner.cookie, width);
    try {
      await page.goto(url('blueprints'));
      await page.locator('#blueprint-templates input[type=checkbox]').first().waitFor();
      const name = `Refunder ${width}`;
      await page.fill('#blueprint-name', name);
      await page.fill('#blueprint-tags', 'support after-sales');
      await page.check('#blueprint-templates input[type=checkbox]');
      await page.click('#blueprint-save');
      const item = page.locator('li[data-blueprint]', { hasText: name });
      await item.waitFor();
      const text = await item.innerText();
      t.true(text.includes('Yen and dinars'), text);
      t.true(text.includes('JPY 5,000'), text);
      const stored = ((await owner.get('/blueprints')).body.data as Array<{ name: string }>).find(
        (b) => b.name === name,
      );
      const template = (await owner.get('/templates')).body.data[0].id;
      t.like(stored, { name, tags: ['support', 'after-sales'], templates: [template] });
      t.true((await owner.ledger()).some((r) => r.kind === 'blueprint.created' && r.actor === `user:${owner.id}`));
      t.deepEqual(await clipped(page, '#blueprint-save, li[data-blueprint], nav a'), []);
      t.true(existsSync(await screenshot(page, `console-blueprints-${width}`)));
      t.deepEqual(problems, []);
    } finally {
      await close();
    }
  });
}

const totpOf = (base32: string) =>
  new TOTP({ secret: Secret.fromBase32(base32), algorithm: 'SHA1', digits: 6, period: 30 });
/** The code of a 30 s time step, and the step now: codes are good one step either side, each step once. */
const codeOf = (base32: string, step: number) => totpOf(base32).generate({ timestamp: step * 30_000 + 1_000 });
const stepNow = () => Math.floor(Date.now() / 30_000);

test.serial('your account: password, two-factor with a QR code and recovery codes, sessions', async (t) => {
  t.timeout(90_000);
  const email = 'admin@setup.example';
  const admin = await personIn('admin', email, 'admin password 1');
  const elsewhere = await signIn(server.url, email, 'admin password 1');
  const { page, problems, close } = await signedInPage(browser, server.url, admin.cookie, 'desktop');
  const me = (cookie: string) => call(server.url, 'GET', '/api/me', { headers: { cookie } });
  try {
    t.is((await page.goto(url('account')))?.status(), 200);
    t.is(await page.locator('nav a[aria-current="page"]').textContent(), 'Your account');

    // Sessions: this one and the one elsewhere; "sign out everywhere else" ends the other.
    await page.locator('tr[data-session]').nth(1).waitFor();
    t.is(await page.locator('tr[data-session]').count(), 2);
    t.true((await page.locator('#account-sessions-body').innerText()).includes('This session'));
    await page.getByRole('button', { name: 'Sign out everywhere else…' }).click();
    await page.getByRole('button', { name: 'Sign them out' }).click();
    await page.locator('#status', { hasText: 'One session signed out.' }).waitFor();
    t.is((await me(elsewhere)).status, 401);
    t.is(await page.locator('tr[data-session]').count(), 1);

    // The password: a wrong current one is the API's sentence; the right one changes it.
    await page.fill('#account-current-password', 'not my password 1');
    await page.fill('#account-new-password', 'the admin passphrase 2');
    await page.fill('#account-confirm-password', 'the admin passphrase 2');
    await page.click('#account-password-save');
    const error = page.locator('#account-password-error');
    await error.waitFor();
    t.regex((await error.textContent()) ?? '', /^[A-Z][^"]*\.$/);
    await page.fill('#account-current-password', 'admin password 1');
    await page.click('#account-password-save');
    await page.locator('#status', { hasText: 'Password changed.' }).waitFor();
    t.true(await error.isHidden());
    t.is(typeof (await signIn(server.url, email, 'the admin passphrase 2')), 'string');

    // Two-factor: the QR code is an image the page may show (CSP img-src), the secret beside it.
    await page.click('#totp-start');
    const qr = page.locator('#totp-qr');
    await qr.waitFor();
    t.regex((await qr.getAttribute('src')) ?? '', /^data:image\/svg\+xml;/);
    t.true(
      await qr.evaluate((node) => {
        const img = node as unknown as { complete: boolean; naturalWidth: number };
        return img.complete && img.naturalWidth > 0;
      }),
      'the QR code is drawn',
    );
    const secret = ((await page.locator('#totp-secret').textContent()) ?? '').trim();
    t.regex(secret, /^[A-Z2-7]{16,}$/);
    const first = stepNow();
    await page.fill('#totp-code', codeOf(secret, first));
    await page.click('#totp-confirm');
    const codes = page.locator('#recovery-codes li');
    await codes.nth(9).waitFor();
    t.is(await codes.count(), 10);
    const firstCodes = (await codes.allTextContents()).map((c) => c.trim());
    const href = (await page.locator('#recovery-download').getAttribute('href')) ?? '';
    t.is(decodeURIComponent(href.replace(/^data:text\/plain;charset=utf-8,/, '')), firstCodes.join('\n') + '\n');
    await page.click('#recovery-done');
    await page.locator('#totp-state', { hasText: 'Sign-in asks for a code.' }).waitFor();
    const pageCookie = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    t.true((await me(pageCookie)).body.user.totp);
    const asked = await call(server.url, 'POST', '/api/session', {
      headers: csrf,
      json: { email, password: 'the admin passphrase 2' },
    });
    t.is(asked.status, 401);
    t.is(asked.body.error.type, 'totp_required');

    // New recovery codes, with a current code: ten others.
    await page.fill('#totp-current-code', codeOf(secret, first + 1));
    await page.click('#totp-renew');
    await codes.nth(9).waitFor();
    const second = (await codes.allTextContents()).map((c) => c.trim());
    t.is(second.filter((c) => firstCodes.includes(c)).length, 0);
    await page.click('#recovery-done');

    // Two-factor off with one of the recovery codes, as a person whose authenticator is lost.
    await page.fill('#totp-current-code', second[0]!);
    await page.click('#totp-off');
    await page.locator('#totp-state', { hasText: 'Two-factor sign-in is off' }).waitFor();
    t.is(
      (
        await call(server.url, 'POST', '/api/session', {
          headers: csrf,
          json: { email, password: 'the admin passphrase 2' },
        })
      ).status,
      200,
    );
    t.true(existsSync(await screenshot(page, 'console-account-desktop')));
    t.deepEqual(
      problems.filter((p) => !p.includes('status of 4')),
      [],
    );
  } finally {
    await close();
  }
});
