import test from 'ava';
import { existsSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import {
  clipped,
  launch,
  memberSession,
  rowsAre,
  screenshot,
  signedInPage,
  WIDTHS,
  type Width,
} from './reports-support.js';

/**
 * The ledger section in a real browser (issue 21 item 4), at desktop and phone widths: the
 * records newest first with their kind, actor and subject, filters, "Show older", the latest
 * checkpoint, and "Verify now", which shows "Verified" with the record count, and, once a stored
 * record is changed, "Broken" naming it. What agents wrote (a hostile name) is shown as text.
 * Roles: an auditor has the section; a member has neither the link nor the page.
 */
const HOSTILE = '<img src=x onerror="document.title=1">';
const PASSWORD = 'a-long-password-1';

let server: ServedInProcess;
let browser: Browser;
let owner: Person;

test.before(async () => {
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '1000' } });
  owner = await ownerConsole(server);
  const agent = expectStatus(await owner.send('POST', '/agents', { name: HOSTILE, actsFor: owner.id }), 201, 'agent');
  expectStatus(await owner.send('POST', `/agents/${agent.body.id}/stop`, { reason: 'Paid twice' }), 200, 'stop');
  // More records than one page holds (50), so that "Show older" has something to show.
  for (let i = 0; i < 55; i += 1)
    await server.app.services.agents.create({ workspaceId: owner.wid, name: `fleet-${i}`, actsFor: owner.id });
  for (const role of ['auditor', 'member'])
    expectStatus(
      await owner.send('POST', '/members', { email: `${role}@acme.example`, name: role, role, password: PASSWORD }),
      201,
      role,
    );
  browser = await launch();
});

test.after.always(async () => {
  await browser?.close();
  await stopAndClean(server);
});

const ledgerUrl = () => `${server.url}/console/ledger?w=${owner.wid}`;

for (const width of Object.keys(WIDTHS) as Width[]) {
  test.serial(`${width}: the records newest first, filters, older pages and verify now`, async (t) => {
    t.timeout(60_000);
    const all = await owner.ledger();
    const { page, problems, close } = await signedInPage(browser, server.url, owner.cookie, width);
    try {
      const res = await page.goto(ledgerUrl());
      t.is(res?.status(), 200);
      t.is(await page.title(), 'Ledger · Default · svc console');
      t.is(await page.locator('nav a[aria-current="page"]').textContent(), 'Ledger');
      const rows = page.locator('#records tbody tr');
      await rows.first().waitFor();
      t.is(await rows.count(), 50);
      const newest = all[all.length - 1]!;
      const first = await rows.first().innerText();
      t.true(first.includes(String(newest.index)) && first.includes(newest.kind), first);
      t.is(await rows.first().getAttribute('data-index'), String(newest.index));

      // The latest checkpoint: the size now, and what the last signed checkpoint covers.
      await page.locator('#checkpoint').waitFor();
      const facts = await page.locator('#checkpoint').innerText();
      t.true(facts.includes(String(all.length)), facts);
      t.true(facts.includes(`/${owner.wid}`), 'the origin line names the workspace');

      // Verify now: the same check as svc ledger verify, over every record.
      await page.click('#verify-now');
      await page.locator('#verify-badge').waitFor();
      t.is(await page.locator('#verify-badge').textContent(), 'Verified');
      const verdict = await page.locator('#verify-result').innerText();
      t.true(verdict.includes(`${all.length} records`), verdict);
      t.true(verdict.includes('svc ledger verify'), verdict);

      // Show older: the 50 newest, then the rest.
      await page.click('#records-more');
      t.is(await rowsAre(page, '#records tbody tr', all.length), all.length);
      t.is(await rows.last().getAttribute('data-index'), '0');
      t.is(await page.locator('#records-more').count(), 0, 'nothing older than record 0');

      // Filter by kind: only the stop, with the hostile name as text and the reason.
      await page.fill('#filter-kind', 'agent.stopped');
      await page.click('#filter-apply');
      t.is(await rowsAre(page, '#records tbody tr', 1), 1);
      const stopped = await rows.first().innerText();
      t.true(stopped.includes('agent.stopped'), stopped);
      // The actor by name, its id on hover (test/browser/console-roles.test.ts holds the names).
      t.is(await rows.first().locator('td.actor [title]').getAttribute('title'), `user:${owner.id}`);
      t.false(stopped.includes(`user:${owner.id}`), stopped);
      await rows.first().locator('td.data summary').click();
      const data = await rows.first().locator('td.data pre').innerText();
      t.true(data.includes('Paid twice'), data);
      // The agent's creation, found by its subject: its data holds the hostile name, shown as text.
      const created = all.find((r) => r.kind === 'agent.created' && r.data.name === HOSTILE)!;
      await page.fill('#filter-kind', '');
      await page.fill('#filter-subject', created.subject);
      await page.click('#filter-apply');
      const createdRow = page.locator(`#records tbody tr[data-index="${created.index}"]`);
      await createdRow.locator('td.data summary').click();
      t.true(
        (await createdRow.locator('td.data pre').innerText()).includes('<img src=x onerror='),
        'the name is shown as the text it is',
      );
      t.is(await page.locator('main img').count(), 0, 'no markup from data');
      t.not(await page.title(), '1');

      // A filter that matches nothing says so.
      await page.fill('#filter-subject', 'nothing-like-this');
      await page.click('#filter-apply');
      t.is(await page.locator('#records-empty').textContent(), 'No record matches these filters.');
      await page.click('#filter-clear');
      t.is(await rowsAre(page, '#records tbody tr', 50), 50);

      t.deepEqual(await clipped(page, '#verify-now, #filter-apply, #filter-clear, #records-more, nav a'), []);
      t.true(existsSync(await screenshot(page, `console-ledger-${width}`)));
      t.deepEqual(problems, []);
    } finally {
      await close();
    }
  });
}

test.serial('an auditor has the ledger; a member has neither its link nor its page', async (t) => {
  t.timeout(60_000);
  const auditor = await signedInPage(
    browser,
    server.url,
    await memberSession(server.url, 'auditor@acme.example', PASSWORD),
    'desktop',
  );
  try {
    await auditor.page.goto(ledgerUrl());
    await auditor.page.locator('#records tbody tr').first().waitFor();
    t.is(await auditor.page.locator('#role').textContent(), 'auditor');
    t.is(await auditor.page.locator('nav a[data-nav="ledger"]').count(), 1);
    t.deepEqual(auditor.problems, []);
  } finally {
    await auditor.close();
  }
  const member = await signedInPage(
    browser,
    server.url,
    await memberSession(server.url, 'member@acme.example', PASSWORD),
    'desktop',
  );
  try {
    const res = await member.page.goto(ledgerUrl());
    t.is(res?.status(), 403, 'the page says so, with the status to match');
    t.is(await member.page.locator('nav a[data-nav="ledger"]').count(), 0);
    t.true((await member.page.locator('#not-for-role').innerText()).includes('does not open this section'));
    t.is(await member.page.locator('#records').count(), 0);
    // The browser logs the 403 of the page itself; nothing else may be reported.
    t.deepEqual(
      member.problems.filter((p) => !p.includes('status of 403')),
      [],
    );
  } finally {
    await member.close();
  }
});

test.serial('verify now names the first record changed in the store', async (t) => {
  t.timeout(60_000);
  const { store } = server.app;
  const entry = (await store.tables.ledger.get([owner.wid, 2]))!;
  await store.write(async () => {
    await store.tables.ledger.put([owner.wid, 2], { ...entry, bytes: entry.bytes.replace('"agent.', '"agenT.') });
  });
  const { page, problems, close } = await signedInPage(browser, server.url, owner.cookie, 'desktop');
  try {
    await page.goto(ledgerUrl());
    await page.click('#verify-now');
    await page.locator('#verify-badge').waitFor();
    t.is(await page.locator('#verify-badge').textContent(), 'Broken');
    const verdict = await page.locator('#verify-result').innerText();
    t.true(verdict.includes('First bad record: 2.'), verdict);
    await screenshot(page, 'console-ledger-broken');
    t.deepEqual(problems, []);
  } finally {
    await close();
  }
});
