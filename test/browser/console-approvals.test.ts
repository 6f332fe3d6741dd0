/// <reference lib="dom" />
import test from 'ava';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { consoleClient, expectStatus, type Person } from '../helpers/console.js';
import { manualClock } from '../helpers/clock.js';
import { authorize } from '../helpers/gate.js';
import { ownerSession, signIn } from '../helpers/http.js';
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
 * The approvals section, /console/approvals (issue 21: "approvals are listed in id order, without
 * the rule that asked for them"), in Debian's chromium at desktop and phone widths: what waits is
 * listed oldest first, each with the rule and the gate's reason; approve and deny with a note; a
 * member sees only the approvals of agents that act for them; a hostile summary is text; at 390 px
 * the note and the buttons lie on the screen. Screenshots:
 * test/artifacts/console-approvals-{desktop,phone}.png.
 */

const RULE = {
  actions: ['payment'],
  merchants: ['acme.example'],
  currencies: ['EUR'],
  maxAmount: 5000,
  approval: { above: 2000 },
};
const HOSTILE = '<img src=x onerror="window.__pwned=1">Pay <b>Acme</b>';

// Time moves only when the test says: each payment is asked a minute after the one before.
const clock = manualClock(Date.now() - 10 * 60_000);
let server: ServedInProcess;
let browser: Browser;
let owner: Person;
let member: Person;
/** The rule id of billing-bot's mandate (each agent's rules get their own ids). */
let ruleId: string;
/** The approvals in the order they were asked, with their summaries. */
const asked: Array<{ id: string; summary: string; forMember: boolean }> = [];
const pages: PersonPage[] = [];

async function agentWithKey(name: string, actsFor?: string): Promise<{ id: string; key: string }> {
  const agent = expectStatus(
    await owner.send('POST', '/agents', { name, ...(actsFor ? { actsFor } : {}) }),
    201,
    'agent',
  ).body;
  const mandate = expectStatus(
    await owner.send('PUT', `/agents/${agent.id}/mandate`, { rules: [RULE] }),
    200,
    'mandate',
  );
  if (!actsFor) ruleId = mandate.body.rules[0].id;
  return {
    id: agent.id,
    key: expectStatus(await owner.send('POST', `/agents/${agent.id}/keys`, {}), 201, 'key').body.key,
  };
}

test.before(async () => {
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '100' }, clock });
  const wid = server.boot.workspaceId!;
  owner = { ...consoleClient(server, wid, await ownerSession(server)), id: '' };
  owner.id = await owner.userId();
  const password = 'member-password-1';
  const user = await withStore(server.dataDir, (app) =>
    app.services.people.addMember({
      workspaceId: wid,
      email: 'mia@example.test',
      name: 'Mia',
      password,
      role: 'member',
    }),
  );
  member = { ...consoleClient(server, wid, await signIn(server.url, 'mia@example.test', password)), id: user.id };
  const billing = await agentWithKey('billing-bot');
  const mias = await agentWithKey('mias-helper', member.id);
  const plan: Array<[typeof billing, number, string]> = [
    [billing, 2500, 'Pay Acme invoice 1 (2500)'],
    [mias, 2600, 'Pay Acme invoice 2 (2600)'],
    [billing, 2700, HOSTILE],
    [mias, 2800, 'Pay Acme invoice 4 (2800)'],
  ];
  for (const [agent, amount, summary] of plan) {
    clock.advance(60_000);
    const res = expectStatus(
      await authorize(server, agent.key, {
        type: 'payment',
        summary,
        payment: { amount, currency: 'EUR', merchant: 'acme.example' },
      }),
      200,
      'authorize',
    );
    if (res.body.decision !== 'review') throw new Error(`expected review: ${res.text}`);
    asked.push({ id: res.body.approvalId, summary, forMember: agent === mias });
  }
  clock.advance(60_000);
  browser = await launch();
});

test.after.always(async () => {
  for (const p of pages) await p.close();
  await browser?.close();
  await stopAndClean(server);
});

async function open(cookie: string, viewport: typeof DESKTOP): Promise<PersonPage> {
  const p = await personPage(browser, server.url, cookie, viewport);
  pages.push(p);
  await p.page.goto(`${server.url}/console/approvals?w=${server.boot.workspaceId!}`);
  return p;
}

const order = (p: PersonPage) =>
  p.page
    .locator('#approvals-body li[data-approval]')
    .evaluateAll((items) => items.map((i) => i.getAttribute('data-approval')));

test.serial('oldest first, each with the rule and the reason that asked; approve and deny with a note', async (t) => {
  t.timeout(120_000);
  const p = await open(owner.cookie, DESKTOP);
  const { page, errors } = p;
  await page.locator('#approvals-body li[data-approval]').first().waitFor();
  t.is((await navigation(page)).current, 'Approvals');
  t.deepEqual(
    await order(p),
    asked.map((a) => a.id),
  );
  t.is(await page.locator('#approvals-count').textContent(), '4');

  const first = page.locator(`li[data-approval="${asked[0]!.id}"]`);
  t.is(await first.locator('.item-title').textContent(), '1. Pay Acme invoice 1 (2500)');
  t.is(
    await first.locator('.approval-rule span').nth(1).textContent(),
    'payment · at acme.example · up to EUR 50.00 each · a person approves above EUR 20.00',
  );
  t.is(await first.locator('.approval-rule .rule-id').textContent(), ruleId);
  t.is(
    await first.locator('.approval-reason span').nth(1).textContent(),
    `Rule ${ruleId} asks a person to approve amounts above EUR 20.00.`,
  );
  t.true((await first.innerText()).includes('EUR 25.00'));
  t.true((await first.locator('.waited').innerText()).startsWith('Waiting 9 minutes'));
  t.true((await first.innerText()).includes('billing-bot'));

  // The hostile summary is text.
  const hostile = page.locator(`li[data-approval="${asked[2]!.id}"]`);
  t.is(await hostile.locator('.item-title').textContent(), `3. ${HOSTILE}`);
  t.is(await page.locator('#approvals-body img, #approvals-body b').count(), 0);

  await screenshot(page, 'console-approvals-desktop.png');
  t.true(existsSync(join(ARTIFACTS, 'console-approvals-desktop.png')));

  // Approve the oldest with a note; deny the next.
  await first.getByPlaceholder('Note (optional)').fill('Matches the order');
  await first.getByRole('button', { name: 'Approve' }).click();
  await first.waitFor({ state: 'detached' });
  t.is(await page.locator('#status').textContent(), 'Approved: Pay Acme invoice 1 (2500)');
  const second = page.locator(`li[data-approval="${asked[1]!.id}"]`);
  await second.getByPlaceholder('Note (optional)').fill('Not this month');
  await second.getByRole('button', { name: 'Deny' }).click();
  await second.waitFor({ state: 'detached' });
  t.is(await page.locator('#status').textContent(), 'Denied: Pay Acme invoice 2 (2600)');
  t.deepEqual(await order(p), [asked[2]!.id, asked[3]!.id]);
  t.is(await page.locator('#approvals-body .item-title').first().textContent(), `1. ${HOSTILE}`);

  const approved = expectStatus(await owner.get('/approvals?status=approved'), 200, 'approved').body.data;
  t.like(
    approved.find((a: { id: string }) => a.id === asked[0]!.id),
    {
      approvals: [{ by: owner.id, note: 'Matches the order' }],
    },
  );
  const denied = expectStatus(await owner.get('/approvals?status=denied'), 200, 'denied').body.data;
  t.is(denied.find((a: { id: string }) => a.id === asked[1]!.id)?.reason, 'Not this month');
  t.is(await page.evaluate('typeof window.__pwned'), 'undefined');
  t.deepEqual(errors(), []);
});

test.serial(
  'a member at 390 px sees only the approvals of agents that act for them, and reaches every control',
  async (t) => {
    t.timeout(60_000);
    const p = await open(member.cookie, PHONE);
    const { page, errors } = p;
    const only = asked.filter((a) => a.forMember && a.id !== asked[1]!.id);
    await page.locator(`li[data-approval="${only[0]!.id}"]`).waitFor();
    t.deepEqual(
      await order(p),
      only.map((a) => a.id),
    );
    const item = page.locator(`li[data-approval="${only[0]!.id}"]`);
    await assertReachable(t, item.getByPlaceholder('Note (optional)'), 'the note');
    await assertReachable(t, item.getByRole('button', { name: 'Approve' }), 'Approve');
    await assertReachable(t, item.getByRole('button', { name: 'Deny' }), 'Deny');
    await assertReachable(t, item.locator('.approval-rule'), 'the rule');
    await screenshot(page, 'console-approvals-phone.png');
    t.true(existsSync(join(ARTIFACTS, 'console-approvals-phone.png')));
    t.deepEqual(errors(), []);
  },
);
