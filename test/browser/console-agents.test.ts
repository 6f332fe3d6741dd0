/// <reference lib="dom" />
import test from 'ava';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { consoleClient, expectStatus, type Person } from '../helpers/console.js';
import { authorize, payment } from '../helpers/gate.js';
import { call, ownerSession, signIn } from '../helpers/http.js';
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
 * The agents section, /console/agents (issue 21 item 4), in Debian's chromium at desktop and
 * phone widths: an owner creates an agent from a blueprint, edits its mandate with the
 * templates, mints a key (shown once, copied) that works at the gate and revokes it, stops and
 * restarts the agent with reasons; a member sees only the agents that act for them; at 390 px
 * the rows' buttons lie inside the screen (the overview's table too); a hostile agent name is
 * text. Screenshots: test/artifacts/console-agents-{desktop,phone}.png.
 */

const HOSTILE = '<img src=x onerror="window.__pwned=1"><b>bold</b>';
const RULE = {
  actions: ['payment'],
  merchants: ['acme.example'],
  currencies: ['EUR'],
  maxAmount: 5000,
  approval: { above: 2000 },
};

let server: ServedInProcess;
let browser: Browser;
let owner: Person;
let member: Person;
let templateId: string;
let blueprintId: string;
let hostileId: string;
let membersAgentId: string;
const pages: PersonPage[] = [];

test.before(async () => {
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '100' } });
  const wid = server.boot.workspaceId!;
  const ownerCookie = await ownerSession(server);
  owner = { ...consoleClient(server, wid, ownerCookie), id: '' };
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
  templateId = expectStatus(
    await owner.send('POST', '/templates', { name: 'Acme invoices', rules: [RULE] }),
    201,
    'template',
  ).body.id;
  blueprintId = expectStatus(
    await owner.send('POST', '/blueprints', { name: 'Invoice payer', tags: ['billing'], templates: [templateId] }),
    201,
    'blueprint',
  ).body.id;
  hostileId = expectStatus(await owner.send('POST', '/agents', { name: HOSTILE }), 201, 'agent').body.id;
  membersAgentId = expectStatus(
    await owner.send('POST', '/agents', { name: 'mias-helper', actsFor: member.id }),
    201,
    'agent',
  ).body.id;
  browser = await launch();
});

test.after.always(async () => {
  for (const p of pages) await p.close();
  await browser?.close();
  await stopAndClean(server);
});

async function open(cookie: string, viewport: typeof DESKTOP, path = '/console/agents'): Promise<PersonPage> {
  const p = await personPage(browser, server.url, cookie, viewport);
  pages.push(p);
  await p.page.goto(`${server.url}${path}?w=${server.boot.workspaceId!}`);
  return p;
}

test.serial(
  'an owner creates an agent from a blueprint, edits its mandate, mints and revokes a key, stops and restarts it',
  async (t) => {
    t.timeout(120_000);
    const { page, errors } = await open(owner.cookie, DESKTOP);
    t.is(await page.title(), 'Agents · Default · svc console');
    t.deepEqual(await navigation(page), {
      labels: [
        'Overview',
        'Agents',
        'Templates',
        'Blueprints',
        'Approvals',
        'Keys',
        'Members',
        'Ledger',
        'Usage',
        'Budgets',
        'Webhooks',
        'Integrations',
        'MCP tools',
        'Your account',
      ],
      current: 'Agents',
    });
    t.is(await page.locator('body').getAttribute('data-section'), 'agents');

    // The list, with the hostile name as text.
    const hostileRow = page.locator(`tr[data-agent="${hostileId}"]`);
    await hostileRow.waitFor();
    t.is(await hostileRow.locator('.agent-name').textContent(), HOSTILE);
    t.is(await page.locator('#agents-body img, #agents-body b').count(), 0);
    t.is(await page.locator(`tr[data-agent="${membersAgentId}"] td[data-label="Acts for"]`).textContent(), 'Mia');

    // A new agent from the blueprint: its tags and its mandate come from the template.
    await page.locator('#agent-new-blueprint option', { hasText: 'Invoice payer' }).waitFor({ state: 'attached' });
    await page.selectOption('#agent-new-blueprint', blueprintId);
    await page.click('#agent-new-submit');
    t.is(await page.locator('#agent-new-error').textContent(), 'Give the agent a name.');
    await page.fill('#agent-new-name', 'invoice-bot');
    await page.click('#agent-new-submit');
    await page.waitForFunction(() => /^#agt_/.test(window.location.hash));
    const agentId = await page.evaluate(() => window.location.hash.slice(1));
    await page.locator('#agent-detail-title', { hasText: 'invoice-bot' }).waitFor();
    t.is(await page.locator('#status').textContent(), 'Created: invoice-bot');
    const made = expectStatus(await owner.get(`/agents/${agentId}`), 200, 'agent').body;
    t.like(made, { name: 'invoice-bot', tags: ['billing'], blueprint: blueprintId, actsFor: owner.id });
    const detail = page.locator('#agent-detail');
    t.true((await detail.locator('.facts').innerText()).includes('Invoice payer'));
    const ruleLine = 'payment · at acme.example · up to EUR 50.00 each · a person approves above EUR 20.00';
    t.is(await detail.locator('#agent-mandate .rule-text').textContent(), ruleLine);
    // Its AP2 holder key (docs/ap2.md): none yet, then the one registered, by thumbprint.
    t.regex(await detail.locator('.holder-key').innerText(), /None registered/);

    // The mandate: remove the rule and save; add the template's rules back and save.
    await detail.locator('#agent-mandate').getByRole('button', { name: 'Remove rule 1' }).click();
    t.is(
      await detail.locator('#agent-mandate .empty').textContent(),
      'No rules: every action this agent asks for is denied.',
    );
    await detail.getByRole('button', { name: 'Save mandate' }).click();
    await page.locator('#status', { hasText: 'Mandate saved: invoice-bot' }).waitFor();
    t.deepEqual(expectStatus(await owner.get(`/agents/${agentId}/mandate`), 200, 'mandate').body.rules, []);
    const template = detail.locator(`li[data-template="${templateId}"]`);
    t.true((await template.innerText()).includes('Acme invoices'));
    await template.getByRole('button', { name: 'Add its rules' }).click();
    t.is(await template.getByRole('button').textContent(), 'Added');
    await detail.getByRole('button', { name: 'Save mandate' }).click();
    await detail.locator('#agent-mandate .rule-id').waitFor();
    const saved = expectStatus(await owner.get(`/agents/${agentId}/mandate`), 200, 'mandate').body.rules;
    t.is(saved.length, 1);
    t.like(saved[0], RULE);

    // A key: shown once, copied, works at the gate; revoked, it stops working.
    await detail.locator('#agent-key-name').fill('laptop');
    await detail.getByRole('button', { name: 'Mint key' }).click();
    const secret = detail.locator('.secret');
    await secret.waitFor();
    const key = await secret.locator('input').inputValue();
    t.regex(key, /^ask_[A-Za-z0-9_-]{43}$/);
    t.true((await secret.innerText()).includes('shown once'));
    await secret.getByRole('button', { name: 'Copy' }).click();
    await secret.locator('.secret-copied', { hasText: /Copied|Selected/ }).waitFor();
    t.is(
      expectStatus(await authorize(server, key, payment(500)), 200, 'authorize').body.decision,
      'allow',
      'the minted key works at the gate',
    );
    const keyRow = detail.locator('li.key', { hasText: 'laptop' });
    const keyId = await keyRow.getAttribute('data-key');
    await secret.getByRole('button', { name: 'Done' }).click();
    t.is(await detail.locator('.secret').count(), 0, 'the value is gone once dismissed');
    t.false((await page.content()).includes(key), 'and nowhere in the page');
    await keyRow.getByRole('button', { name: 'Revoke' }).click();
    await keyRow.getByRole('button', { name: 'Revoke key' }).click();
    await detail.locator(`li.key[data-key="${keyId}"]`).waitFor({ state: 'detached' });
    t.is(await page.locator('#status').textContent(), 'Key revoked: laptop');
    t.is((await authorize(server, key, payment(500))).status, 401, 'the revoked key is refused');

    // Stop with a reason (required), then restart with a reason: both in the ledger.
    const row = page.locator(`tr[data-agent="${agentId}"]`);
    await row.getByRole('button', { name: 'Stop…' }).click();
    await row.getByRole('button', { name: 'Stop agent' }).click();
    t.is(await row.getByRole('alert').textContent(), 'Give a reason: it is recorded in the ledger with your name.');
    await row.getByRole('textbox').fill('Paid twice');
    await row.getByRole('button', { name: 'Stop agent' }).click();
    await row.locator('.badge', { hasText: 'Stopped' }).waitFor();
    t.true((await row.locator('.holds').innerText()).includes('Paid twice'));
    await row.getByRole('button', { name: 'Restart…' }).click();
    await row.getByRole('textbox').fill('Refund made');
    await row.getByRole('button', { name: 'Restart agent' }).click();
    await row.locator('.badge', { hasText: 'Running' }).waitFor();
    t.is(await page.locator('#status').textContent(), 'Restarted: invoice-bot');
    const ledger = (await owner.ledger()).filter((r) => r.subject === agentId);
    t.like(ledger.find((r) => r.kind === 'agent.stopped')?.data, { reason: 'Paid twice' });
    t.like(ledger.find((r) => r.kind === 'agent.restarted')?.data, { reason: 'Refund made' });

    await screenshot(page, 'console-agents-desktop.png');
    t.true(existsSync(join(ARTIFACTS, 'console-agents-desktop.png')));
    t.is(await page.evaluate('typeof window.__pwned'), 'undefined');
    t.deepEqual(errors(), []);
  },
);

test.serial('a member at 390 px sees only the agents that act for them, with every button on the screen', async (t) => {
  t.timeout(60_000);
  const { page, errors } = await open(member.cookie, PHONE);
  t.deepEqual((await navigation(page)).labels, [
    'Overview',
    'Agents',
    'Templates',
    'Blueprints',
    'Approvals',
    'Your account',
  ]);
  const row = page.locator(`tr[data-agent="${membersAgentId}"]`);
  await row.waitFor();
  t.deepEqual(
    await page
      .locator('#agents-body tr[data-agent]')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-agent'))),
    [membersAgentId],
  );
  t.is(await page.locator('#agent-new-acts-for').count(), 0, "a member's agents act for them: nobody to choose");
  for (const name of ['Open', 'Stop…'])
    await assertReachable(t, row.getByRole('link', { name }).or(row.getByRole('button', { name })), name);
  await row.getByRole('button', { name: 'Stop…' }).click();
  await assertReachable(t, row.getByRole('button', { name: 'Stop agent' }), 'Stop agent');
  await assertReachable(t, row.getByRole('textbox'), 'the reason');
  await row.getByRole('button', { name: 'Cancel' }).click();

  // The agent's page: the mandate's templates and the key form, on the screen.
  await row.getByRole('link', { name: 'Open' }).click();
  await page.locator('#agent-detail-title', { hasText: 'mias-helper' }).waitFor();
  await assertReachable(t, page.getByRole('button', { name: 'Mint key' }), 'Mint key');
  await assertReachable(t, page.locator(`li[data-template="${templateId}"]`).getByRole('button'), 'Add its rules');
  await screenshot(page, 'console-agents-phone.png');
  t.true(existsSync(join(ARTIFACTS, 'console-agents-phone.png')));
  // An agent that does not act for them is not found to them.
  await page.goto(`${server.url}/console/agents?w=${server.boot.workspaceId!}#${hostileId}`);
  await page.locator('#agent-detail-body', { hasText: 'No such agent among those you see.' }).waitFor();
  t.deepEqual(errors(), []);
});

test.serial("at 390 px the overview's agents table keeps its buttons on the screen (issue 21)", async (t) => {
  t.timeout(60_000);
  const { page, errors } = await open(owner.cookie, PHONE, '/console');
  const row = page.locator(`tr[data-agent="${hostileId}"]`);
  await row.waitFor();
  await assertReachable(t, row.getByRole('button', { name: 'Stop…' }), 'Stop…');
  await row.getByRole('button', { name: 'Stop…' }).click();
  await assertReachable(t, row.getByRole('button', { name: 'Stop agent' }), 'Stop agent');
  await assertReachable(t, row.getByRole('button', { name: 'Cancel' }), 'Cancel');
  await screenshot(page, 'console-overview-phone.png');
  t.deepEqual(errors(), []);
});

test.serial('an analyst reads the agents that act for them, with nothing to press', async (t) => {
  t.timeout(60_000);
  const password = 'analyst-password-1';
  await withStore(server.dataDir, (app) =>
    app.services.people.addMember({
      workspaceId: server.boot.workspaceId!,
      email: 'ana@example.test',
      name: 'Ana',
      password,
      role: 'analyst',
    }),
  );
  const { page, errors } = await open(await signIn(server.url, 'ana@example.test', password), DESKTOP);
  await page.locator('#agents-body .empty').waitFor();
  t.is(await page.locator('#agents-body').innerText(), 'No agents act for you.');
  t.is(await page.locator('#agent-new').count(), 0);
  // Analysts read the reports (usage and budgets), nothing else beyond their agents.
  t.deepEqual((await navigation(page)).labels, [
    'Overview',
    'Agents',
    'Templates',
    'Blueprints',
    'Usage',
    'Budgets',
    'Your account',
  ]);
  const keys = await call(server.url, 'GET', `/console/keys?w=${server.boot.workspaceId!}`, {
    headers: { cookie: (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ') },
  });
  t.is(keys.status, 403);
  t.true(keys.text.includes('does not open this section'));
  t.deepEqual(errors(), []);
});
