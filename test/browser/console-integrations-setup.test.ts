import test from 'ava';
import { createHmac } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { consoleClient, ownerConsole, type Person } from '../helpers/console.js';
import { call, signIn } from '../helpers/http.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { startReceiver, until } from '../helpers/receiver.js';
import { stopAndClean } from '../helpers/process.js';
import { withStore } from '../helpers/store.js';
import { clipped, launch, screenshot, signedInPage } from './reports-support.js';

/**
 * The integrations section's "Set up an integration" card in a real browser (issue 37, part 1):
 * the card issuer set up from the console answers its secret once and the address to paste, and
 * a delivery signed with that secret to that address is taken (one signed otherwise is refused);
 * Stripe's pasted signing secret is kept and never shown; a refusal reads as a sentence; the
 * ledger records each under the person; an admin is not offered Slack, the chat relay nor the
 * identity provider (owners only, as the API), at a phone's width with nothing cut off.
 */
let server: ServedInProcess;
let browser: Browser;
let owner: Person;

test.before(async () => {
  server = await serveInProcess({
    env: {
      SVC_SIGNIN_RATE_PER_MINUTE: '1000',
      SVC_WEBHOOKS_ALLOW_PRIVATE_TARGETS: '1',
      SVC_WEBHOOKS_DISPATCH_INTERVAL_MS: '50',
    },
  });
  owner = await ownerConsole(server);
  browser = await launch();
});

test.after.always(async () => {
  await browser?.close();
  await stopAndClean(server);
});

const url = () => `${server.url}/console/integrations?w=${owner.wid}`;
const sign = (key: string, body: string, t = Math.floor(Date.now() / 1000)) =>
  `t=${t},v1=${createHmac('sha256', key).update(`${t}.${body}`).digest('hex')}`;

test.serial('an owner sets up the card issuer and Stripe: the secret once, the address to paste', async (t) => {
  t.timeout(60_000);
  const { page, problems, close } = await signedInPage(browser, server.url, owner.cookie, 'desktop');
  try {
    t.is((await page.goto(url()))?.status(), 200);
    t.true(
      (await page.locator('#integration-kind option').allTextContents()).some((o) => o.includes('Shared Signals')),
    );
    await page.selectOption('#integration-kind', 'issuer');
    await page.click('#integration-save');
    const secretField = page.getByRole('textbox', { name: 'Secret of the card issuer integration' });
    await secretField.waitFor();
    const secret = await secretField.inputValue();
    t.regex(secret, /^whs_/);
    const address = await page.locator('#integration-hook-url').inputValue();
    t.is(address, `${server.url}/v1/hooks/issuer/${owner.wid}`);
    await page.locator('li[data-kind="issuer"]').waitFor();

    // The other system, with what the console showed: its signed delivery is taken.
    const body = JSON.stringify({
      id: 'evt_console_1',
      type: 'charge.posted',
      cardId: 'card_console',
      amount: 1250,
      currency: 'EUR',
      merchant: { name: 'Acme', domain: 'acme.example', mcc: '5734' },
      createdAt: new Date().toISOString(),
    });
    const taken = await call(server.url, 'POST', new URL(address).pathname, {
      headers: { 'content-type': 'application/json', 'svc-signature': sign(secret, body) },
      body,
    });
    t.true(taken.status >= 200 && taken.status < 300, `${taken.status} ${taken.text}`);
    const refused = await call(server.url, 'POST', new URL(address).pathname, {
      headers: { 'content-type': 'application/json', 'svc-signature': sign('whs_not_it', body) },
      body,
    });
    t.is(refused.status, 401);

    // Stripe: a too-short secret is refused in words; the right one is kept, never shown.
    await page.selectOption('#integration-kind', 'stripe');
    await page.fill('#integration-signing-secret', 'short');
    await page.click('#integration-save');
    const error = page.locator('#integration-error');
    await error.waitFor();
    t.regex((await error.textContent()) ?? '', /^The signing secret must be at least 8 characters long\.$/);
    await page.fill('#integration-signing-secret', 'whsec_from_stripe_dashboard');
    await page.click('#integration-save');
    await page.locator('#status', { hasText: 'Stripe saved.' }).waitFor();
    t.is(await page.locator('#integration-hook-url').inputValue(), `${server.url}/v1/hooks/stripe/${owner.wid}`);
    t.is(await page.locator('#integration-result input[aria-label^="Secret"]').count(), 0);
    t.is(await page.locator('#integration-signing-secret').inputValue(), '');
    await page.locator('li[data-kind="stripe"]').waitFor();
    t.false((await page.locator('#integrations').innerText()).includes('whsec_from_stripe_dashboard'));

    const recorded = (await owner.ledger()).filter((r) => r.kind === 'integration.configured');
    t.deepEqual(
      recorded.map((r) => [r.subject, r.actor]),
      [
        ['issuer', `user:${owner.id}`],
        ['stripe', `user:${owner.id}`],
      ],
    );
    t.true(existsSync(await screenshot(page, 'console-integrations-setup-desktop')));
    t.deepEqual(
      problems.filter((p) => !p.includes('status of 400')),
      [],
    );
  } finally {
    await close();
  }
});

test.serial('an admin is offered only the kinds an admin may set up; the card fits a phone', async (t) => {
  t.timeout(60_000);
  const wid = owner.wid;
  await withStore(server.dataDir, (app) =>
    app.services.people.addMember({
      workspaceId: wid,
      email: 'admin@integrations.example',
      name: 'Ada',
      password: 'admin password 1',
      role: 'admin',
    }),
  );
  const admin = consoleClient(server, wid, await signIn(server.url, 'admin@integrations.example', 'admin password 1'));
  const { page, problems, close } = await signedInPage(browser, server.url, admin.cookie, 'phone');
  try {
    await page.goto(url());
    await page.locator('#integration-kind').waitFor();
    const options = await page.locator('#integration-kind option').allTextContents();
    t.deepEqual(
      options.map((o) => o.split(' ')[0]),
      ['Card', 'Stripe', 'GitHub', 'Merchant'],
      'no Slack, chat relay nor identity provider: owners only',
    );
    await page.selectOption('#integration-kind', 'github');
    await page.click('#integration-save');
    await page.getByRole('textbox', { name: 'Secret of the github integration' }).waitFor();
    t.is(await page.locator('#integration-hook-url').inputValue(), `${server.url}/v1/hooks/github/${wid}`);
    t.deepEqual(
      await clipped(page, '#integration-setup input, #integration-setup button, #integration-setup select'),
      [],
    );
    t.deepEqual(problems, []);
  } finally {
    await close();
  }
});

test.serial(
  'the chat relay: set up from the console, and its test card arrives signed with the secret shown',
  async (t) => {
    t.timeout(60_000);
    let relaySecret = '';
    const relay = await startReceiver(() => relaySecret);
    const { page, problems, close } = await signedInPage(browser, server.url, owner.cookie, 'desktop');
    try {
      await page.goto(url());
      await page.selectOption('#integration-kind', 'chat-relay');
      await page.fill('#integration-url', relay.url);
      await page.click('#integration-save');
      const secretField = page.getByRole('textbox', { name: 'Secret of the chat relay integration' });
      await secretField.waitFor();
      relaySecret = await secretField.inputValue();
      await page.click('#integration-test');
      await page.locator('#integration-test-result', { hasText: `Sent to ${relay.url}` }).waitFor();
      await until('the test card', () => relay.state.received.length > 0);
      const card = relay.state.received[0]!;
      t.true(card.verified, 'signed with the secret the console showed');
      t.is(card.type, 'approval.card');
      const body = JSON.parse(card.body) as { test: boolean; buttons: unknown[]; approval: { summary: string } };
      t.true(body.test);
      t.deepEqual(body.buttons, []);
      t.regex(body.approval.summary, /^A test card from svc/);
      const sent = (await owner.ledger()).filter((r) => r.kind === 'integration.test_sent');
      t.deepEqual(
        sent.map((r) => [r.subject, r.actor, r.data.url]),
        [['chat-relay', `user:${owner.id}`, relay.url]],
      );
      t.deepEqual(problems, []);
    } finally {
      await close();
      await relay.close();
    }
  },
);
