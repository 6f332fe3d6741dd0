/// <reference lib="dom" />
import test from 'ava';
import type { Browser, Page } from 'playwright-core';
import { consoleClient, expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { authorize } from '../helpers/gate.js';
import { signIn } from '../helpers/http.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { stopAndClean } from '../helpers/process.js';
import { withStore } from '../helpers/store.js';
import { permissions, roleAllows, type Permission } from '../../src/people/permissions.js';
import type { Role } from '../../src/people/records.js';
import { SECTIONS } from '../../src/console/sections.js';
import { DESKTOP, launch, personPage, type PersonPage } from './support.js';

/**
 * The console shows a person what their role can do (issue 37 item 3), in Debian's chromium:
 * for each role (owner, admin, member, analyst, auditor) and each page of the console, every
 * control on the screen (button, field, list, a link drawn as a button) names the permission it
 * needs (data-permission, on itself or around it), and the role holds it in the one permission
 * table (src/people/permissions.ts), as the API checks it; an agent's controls (stop, restart, its
 * mandate and keys) are offered on agents that act for the person, or to an owner or an admin,
 * as the API allows them. No read the page makes is refused (403) either. Then what people
 * noticed: an auditor is offered no "Stop…", a member sees "Stop every agent" only as news while
 * every agent is stopped; the ledger names people and agents (the id on hover); a success notice
 * clears at the next action.
 */

const ROLES: Role[] = ['owner', 'admin', 'member', 'analyst', 'auditor'];
const PASSWORD = 'roles-password-1';
const RULE = { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], approval: { above: 2000 } };

let server: ServedInProcess;
let browser: Browser;
let wid: string;
const people = {} as Record<Role, Person>;
let ownerName: string;
/** The agents, by whom they act for. */
const agents = {} as Record<'owner' | 'member' | 'analyst', { id: string; name: string }>;
const pages: PersonPage[] = [];

test.before(async () => {
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '1000' } });
  wid = server.boot.workspaceId!;
  people.owner = await ownerConsole(server);
  ownerName = expectStatus(await people.owner.get('/members'), 200, 'members').body.data.find(
    (m: { id: string }) => m.id === people.owner.id,
  ).name;
  for (const [role, name] of [
    ['admin', 'Ada Admin'],
    ['member', 'Mia Member'],
    ['analyst', 'Ann Analyst'],
    ['auditor', 'Aud Auditor'],
  ] as const) {
    const email = `${role}@roles.example`;
    const user = await withStore(server.dataDir, (app) =>
      app.services.people.addMember({ workspaceId: wid, email, name, password: PASSWORD, role }),
    );
    people[role] = { ...consoleClient(server, wid, await signIn(server.url, email, PASSWORD)), id: user.id };
  }
  const owner = people.owner;
  // An agent for the owner, the member and the analyst; the analyst's and one of the member's are
  // stopped (so that restart is offered), and a payment of each running one waits for a person.
  for (const who of ['owner', 'member', 'analyst'] as const) {
    const name = `${who}s-bot`;
    const made = expectStatus(
      await owner.send('POST', '/agents', { name, actsFor: people[who].id }),
      201,
      'agent',
    ).body;
    agents[who] = { id: made.id, name };
    expectStatus(await owner.send('PUT', `/agents/${made.id}/mandate`, { rules: [RULE] }), 200, 'mandate');
    if (who === 'analyst') continue;
    const key = expectStatus(await owner.send('POST', `/agents/${made.id}/keys`, {}), 201, 'key').body.key;
    const asked = expectStatus(
      await authorize(server, key, {
        type: 'payment',
        summary: `Pay Acme for ${who}`,
        payment: { amount: 2500, currency: 'EUR', merchant: 'acme.example' },
      }),
      200,
      'authorize',
    );
    if (asked.body.decision !== 'review') throw new Error(`expected review: ${asked.text}`);
  }
  const stopped = expectStatus(
    await owner.send('POST', '/agents', { name: 'members-stopped-bot', actsFor: people.member.id }),
    201,
    'agent',
  ).body;
  for (const id of [stopped.id, agents.analyst.id])
    expectStatus(await owner.send('POST', `/agents/${id}/stop`, { reason: 'Held for the test' }), 200, 'stop');
  expectStatus(await owner.send('POST', '/keys', { scope: 'inference', name: 'ci' }), 201, 'workspace key');
  browser = await launch();
});

test.after.always(async () => {
  for (const p of pages) await p.close();
  await browser?.close();
  await stopAndClean(server);
});

async function open(role: Role, path: string): Promise<PersonPage> {
  const p = await personPage(browser, server.url, people[role].cookie, DESKTOP);
  pages.push(p);
  await p.page.goto(`${server.url}${path}${path.includes('?') ? '&' : '?'}w=${wid}`);
  return p;
}

/** A page's drawing is done: no request under way for half a second. */
const settled = (page: Page) => page.waitForLoadState('networkidle');

interface Control {
  what: string;
  permission: string | null;
  actsFor: string | null;
}

/** Every control a person sees on the page, with the permission it names and the agent's person. */
function controls(page: Page): Promise<Control[]> {
  return page.evaluate(() =>
    Array.from(document.querySelectorAll<HTMLElement>('button, input:not([type=hidden]), select, textarea, a.button'))
      .filter((node) => node.checkVisibility())
      .map((node) => {
        const label =
          node.getAttribute('aria-label') ||
          node.id ||
          (node as HTMLInputElement).name ||
          node.textContent?.trim() ||
          node.tagName;
        return {
          what: `${node.tagName.toLowerCase()} "${label}"`,
          permission: (node.closest('[data-permission]') as HTMLElement | null)?.dataset.permission ?? null,
          actsFor: (node.closest('[data-acts-for]') as HTMLElement | null)?.dataset.actsFor ?? null,
        };
      }),
  );
}

/** Why the role may not use the control (null: it may), by the permission table and the agents' rule. */
function refusal(role: Role, me: string, c: Control): string | null {
  if (c.permission === null) return 'names no permission (data-permission)';
  if (c.permission === 'session') return null;
  if (!Object.hasOwn(permissions, c.permission)) return `names ${c.permission}, which the table does not know`;
  if (!roleAllows(role, c.permission as Permission)) return `needs ${c.permission}, which ${role} does not hold`;
  // An agent's controls: the person it acts for, an owner or an admin (as the API's agents.manageable and restart).
  if (c.actsFor !== null && role !== 'owner' && role !== 'admin' && c.actsFor !== me)
    return `is for the person agent acts for (${c.actsFor || 'nobody'}), not ${role}`;
  return null;
}

for (const role of ROLES) {
  test(`${role}: every control on every page is one the role may use, and no read is refused`, async (t) => {
    t.timeout(180_000);
    const me = people[role].id;
    const problems: string[] = [];
    let seen = 0;
    // One page, going from section to section as the person would.
    const { page, errors } = await open(role, '/console');
    let refused: string[] = [];
    page.on('response', (res) => {
      if (res.status() === 403 && new URL(res.url()).pathname.startsWith('/api/')) refused.push(res.url());
    });
    for (const section of SECTIONS) {
      const path = section.id === 'overview' ? '/console' : `/console/${section.id}`;
      await page.goto(`${server.url}${path}?w=${wid}`);
      await settled(page);
      // The agents page: each agent's own page too (its mandate and keys, for who manages it).
      const views = [''];
      if (section.id === 'agents')
        views.push(
          ...(await page
            .locator('#agents-body a.agent-name')
            .evaluateAll((as) => as.map((a) => a.getAttribute('href') ?? ''))),
        );
      for (const view of views) {
        if (view) {
          await page.evaluate((hash) => (window.location.hash = hash), view);
          await page.locator('#agent-detail-body .detail-grid').waitFor();
          await settled(page);
        }
        for (const c of await controls(page)) {
          seen += 1;
          const why = refusal(role, me, c);
          if (why) problems.push(`${section.id}${view}: ${c.what} ${why}`);
        }
      }
      for (const url of refused) problems.push(`${section.id}: the page's read ${url} was refused (403)`);
      refused = [];
    }
    t.deepEqual(errors(), [], 'no script error');
    t.true(seen > 20, `the walk saw the controls (${seen})`);
    t.deepEqual(problems, []);
  });
}

test('the overview: an auditor is offered no stop or restart, a member reads "stop every agent" only while it holds', async (t) => {
  t.timeout(120_000);
  const auditor = await open('auditor', '/console');
  await auditor.page.locator(`#agents-body tr[data-agent="${agents.owner.id}"]`).waitFor();
  t.is(await auditor.page.locator('#agents-body button').count(), 0, 'no Stop… and no Restart');
  t.false(await auditor.page.locator('#stop-all').isVisible(), 'no empty "Stop every agent" card');

  const analyst = await open('analyst', '/console');
  const own = analyst.page.locator(`#agents-body tr[data-agent="${agents.analyst.id}"]`);
  await own.waitFor();
  t.deepEqual(await own.getByRole('button').allTextContents(), ['Restart'], 'its own stopped agent: restart, not stop');

  const member = await open('member', '/console');
  await member.page.locator(`#agents-body tr[data-agent="${agents.member.id}"]`).waitFor();
  await settled(member.page);
  t.false(await member.page.locator('#stop-all').isVisible(), 'nothing to read while agents may run');

  expectStatus(await people.owner.send('POST', '/stop-all', { reason: 'Roles test drill' }), 200, 'stop all');
  try {
    await member.page.click('#refresh');
    await member.page.locator('#stop-all').getByText('Every agent is stopped.').waitFor();
    t.is(await member.page.locator('#stop-all button, #stop-all input').count(), 0, 'read, not worked');
    t.true((await member.page.locator('#stop-all').innerText()).includes('Roles test drill'));
  } finally {
    expectStatus(await people.owner.send('DELETE', '/stop-all'), 200, 'start all');
  }
});

test('the ledger names people and agents, the id on hover, for an auditor too', async (t) => {
  t.timeout(120_000);
  for (const role of ['owner', 'auditor'] as const) {
    const { page } = await open(role, '/console/ledger');
    await page.fill('#filter-kind', 'agent.stopped');
    await page.click('#filter-apply');
    const row = page
      .locator('#records tbody tr', { hasText: agents.analyst.name })
      .filter({ has: page.locator('span.kind', { hasText: 'agent.stopped' }) });
    await row.waitFor();
    const actor = row.locator('td.actor .named');
    t.is(await actor.textContent(), ownerName);
    t.is(await actor.getAttribute('title'), `user:${people.owner.id}`);
    const subject = row.locator('td.subject .named');
    t.is(await subject.textContent(), agents.analyst.name);
    t.is(await subject.getAttribute('title'), agents.analyst.id);
    t.false((await row.innerText()).includes(agents.analyst.id), 'the id is on hover, not in the text');
  }
});

test('a success notice clears at the next action', async (t) => {
  t.timeout(120_000);
  const { page } = await open('owner', '/console/keys');
  await page.locator('#keys-body tr').first().waitFor();
  await page.fill('#key-new-name', 'notice-test');
  await page.click('#key-new-submit');
  await page.locator('#status').getByText('Key minted: notice-test').waitFor();
  await page.locator('#keys-secret').getByRole('button', { name: 'Done' }).click();
  t.is(await page.locator('#status').textContent(), '', 'pressing Done cleared it');

  await page.fill('#key-new-name', 'notice-test-2');
  await page.click('#key-new-submit');
  await page.locator('#status').getByText('Key minted: notice-test-2').waitFor();
  await page.check('#keys-show-revoked');
  t.is(await page.locator('#status').textContent(), '', 'a choice on the page cleared it');

  // The next action's own notice replaces the last one.
  const row = page.locator('#keys-body tr', { hasText: 'notice-test-2' });
  await row.getByRole('button', { name: 'Revoke' }).click();
  await row.getByRole('button', { name: 'Revoke key' }).click();
  await page.locator('#status').getByText('Key revoked: notice-test-2').waitFor();
  t.false((await page.locator('#status').textContent())!.includes('minted'));
});
