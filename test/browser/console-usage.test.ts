import test from 'ava';
import { existsSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { expectStatus } from '../helpers/console.js';
import { bearer, call, type Reply } from '../helpers/http.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { startGateway, user, type Gateway } from '../gateway/support.js';
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
 * The usage and budgets sections in a real browser (issue 21 item 4), at desktop and phone widths,
 * after real gateway calls to the loopback mock vendor: the usage page shows each model's calls
 * and spend (the sum of the x-svc-cost-micros the calls answered), by team too, with a chart and
 * a table per period; the budgets page shows a budget's use and the ladder's step it reached, and
 * sets a new budget through its form (an invalid one shows the API's message). An analyst reads
 * both; a member has neither.
 */
const PASSWORD = 'a-long-password-1';

let vendor: MockVendor;
let gw: Gateway;
let browser: Browser;
let answers: Reply[];
let searchBudget: string;

const usd = (micros: number) => {
  const digits = micros === 0 || micros >= 10_000 ? 2 : 6;
  return new Intl.NumberFormat('en-US', {
    style: 'currency',
    currency: 'USD',
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  }).format(micros / 1e6);
};
const costOf = (list: Reply[]) => list.reduce((s, a) => s + Number(a.headers['x-svc-cost-micros']), 0);
const servedBy = (a: Reply) => String(a.headers['x-svc-routed-to']);

test.before(async () => {
  vendor = await startMockVendor();
  gw = await startGateway(vendor);
  // The search team's budget is a micro-dollar with one rung: any call takes it past its nudge.
  searchBudget = expectStatus(
    await gw.owner.send('POST', '/budgets', {
      scope: { kind: 'team', id: 'search' },
      amountMicros: 1,
      period: 'day',
      ladder: [{ at: 0.5, step: 'nudge' }],
    }),
    201,
    'budget',
  ).body.id;
  const search = await gw.key({ name: 'search-key', team: 'search', defaultTaskClass: 'general' });
  const ads = await gw.key({ name: 'ads-key', team: 'ads', defaultTaskClass: 'general', policyProfile: 'eu-only' });
  const chat = (key: string, model: string) =>
    call(gw.server.url, 'POST', '/v1/chat/completions', {
      headers: bearer(key),
      json: { model, messages: user('hello') },
    });
  // The Anthropic-kind answer read 2,000 prompt tokens from the vendor's cache and wrote 500 to it.
  vendor.fault('claude-eu-2026', { kind: 'cache', usage: { read: 2_000, write: 500 } });
  answers = [await chat(search, 'small'), await chat(search, 'small'), await chat(ads, 'claude-eu')];
  for (const a of answers) expectStatus(a, 200, 'chat');
  for (const role of ['analyst', 'member'])
    expectStatus(
      await gw.owner.send('POST', '/members', { email: `${role}@acme.example`, name: role, role, password: PASSWORD }),
      201,
      role,
    );
  browser = await launch();
});

test.after.always(async () => {
  await browser?.close();
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
});

const url = (section: string) => `${gw.server.url}/console/${section}?w=${gw.owner.wid}`;

for (const width of Object.keys(WIDTHS) as Width[]) {
  test.serial(`${width}: usage shows each model's calls and spend, by team too, with a chart`, async (t) => {
    t.timeout(60_000);
    const { page, problems, close } = await signedInPage(browser, gw.server.url, gw.owner.cookie, width);
    try {
      t.is((await page.goto(url('usage')))?.status(), 200);
      t.is(await page.locator('nav a[aria-current="page"]').textContent(), 'Usage');
      await page.locator('#usage-table').waitFor();
      const total = await page.locator('#usage-total').innerText();
      t.true(total.includes('3 calls'), total);
      t.true(total.includes(usd(costOf(answers))), total);
      // Tokens in count the prompt cache's: 1 + 1 + (1 + 2,000 + 500) words and cached tokens.
      t.true(total.includes('2,503 tokens in (2,000 read from the prompt cache, 500 written to it)'), total);

      const byModel = new Map<string, Reply[]>();
      for (const a of answers) byModel.set(servedBy(a), [...(byModel.get(servedBy(a)) ?? []), a]);
      t.is(await rowsAre(page, '#usage-table tbody tr', byModel.size), byModel.size);
      for (const [model, list] of byModel) {
        const cells = await page.locator(`#usage-table tr[data-group="${model}"] > *`).allInnerTexts();
        t.is(cells[0]!.trim(), model);
        t.is(cells[1], String(list.length), `${model}: calls`);
        t.is(cells[5], usd(costOf(list)), `${model}: spend`);
      }
      // The chart: bars for the calls, a legend naming each model, its numbers in the period table.
      t.true((await page.locator('#usage-chart svg rect.bar').count()) >= 1);
      const legend = await page.locator('#usage-legend').innerText();
      for (const model of byModel.keys()) t.true(legend.includes(model), legend);
      await page.locator('#usage-periods summary').click();
      const today = page.locator('#usage-periods-table tbody tr').first();
      t.deepEqual((await today.locator('td').allInnerTexts()).slice(1), ['3', usd(costOf(answers))]);

      t.deepEqual(await clipped(page, '#usage-window, #usage-by, #usage-metric, #refresh, nav a'), []);
      t.true(existsSync(await screenshot(page, `console-usage-${width}`)));

      // Split by team: the search team's two calls and the ads team's one.
      await page.selectOption('#usage-by', 'team');
      await page.locator('#usage-table tr[data-group="search"]').waitFor();
      t.is(await page.locator('#usage-table tr[data-group="search"] td').first().innerText(), '2');
      t.is(await page.locator('#usage-table tr[data-group="ads"] td').first().innerText(), '1');
      // Calls instead of spend in the chart; the last 24 hours by hour.
      await page.selectOption('#usage-metric', 'calls');
      t.is(await page.locator('#usage-chart-title').textContent(), 'Calls per day, by team');
      await page.selectOption('#usage-window', '24h');
      await page.locator('#usage-chart-title', { hasText: 'Calls per hour, by team' }).waitFor({ state: 'attached' });
      t.is(await page.locator('#usage-periods-table th').first().textContent(), 'Hour (UTC)');
      t.deepEqual(problems, []);
    } finally {
      await close();
    }
  });

  test.serial(`${width}: budgets show their use and the step reached`, async (t) => {
    t.timeout(60_000);
    const { page, problems, close } = await signedInPage(browser, gw.server.url, gw.owner.cookie, width);
    try {
      t.is((await page.goto(url('budgets')))?.status(), 200);
      const item = page.locator(`li[data-budget="${searchBudget}"]`);
      await item.waitFor();
      const spent = costOf(answers.slice(0, 2));
      const text = await item.innerText();
      t.true(text.includes('Team search'), text);
      t.true(text.includes('Step: Nudge'), text);
      t.true(text.includes(`${usd(spent)} of ${usd(1)} this day`), text);
      t.is(await item.locator('.rung.current').getAttribute('data-step'), 'nudge');
      t.deepEqual(await clipped(page, '#budget-create, #budget-amount, nav a'), []);
      t.true(existsSync(await screenshot(page, `console-budgets-${width}`)));
      t.deepEqual(problems, []);
    } finally {
      await close();
    }
  });
}

test.serial('a budget set with the form appears below its first step; an invalid one shows why', async (t) => {
  t.timeout(60_000);
  const { page, problems, close } = await signedInPage(browser, gw.server.url, gw.owner.cookie, 'desktop');
  try {
    await page.goto(url('budgets'));
    await page.locator('#budget-list').waitFor();
    // No amount: the API refuses it, and its message is shown beside the form.
    await page.selectOption('#budget-kind', 'team');
    await page.fill('#budget-scope-id', 'ads');
    await page.click('#budget-create');
    await page.locator('#budget-error').waitFor();
    t.regex(await page.locator('#budget-error').innerText(), /amountMicros/);

    await page.fill('#budget-amount', '25');
    await page.selectOption('#budget-period', 'month');
    await page.fill('#ladder-approval', '');
    await page.click('#budget-create');
    await page.locator('#status', { hasText: 'Budget set for team ads.' }).waitFor();
    t.true(await page.locator('#budget-error').isHidden());
    const made = (await gw.owner.get('/budgets')).body.data.find(
      (b: { scope: { id: string } }) => b.scope.id === 'ads',
    );
    t.like(made, { amountMicros: 25_000_000, period: 'month' });
    t.deepEqual(
      made.ladder.map((r: { step: string }) => r.step),
      ['nudge', 'downgrade', 'block'],
    );
    const item = page.locator(`li[data-budget="${made.id}"]`);
    await item.waitFor();
    const text = await item.innerText();
    t.true(text.includes('Below every step'), text);
    t.true(text.includes(`of $25.00 this month`), text);
    // The browser logs the refused request (400) itself; nothing else may be reported.
    t.deepEqual(
      problems.filter((p) => !p.includes('status of 400')),
      [],
    );
  } finally {
    await close();
  }
});

test.serial('an analyst reads usage and budgets without the form; a member has neither', async (t) => {
  t.timeout(60_000);
  const analyst = await signedInPage(
    browser,
    gw.server.url,
    await memberSession(gw.server.url, 'analyst@acme.example', PASSWORD),
    'desktop',
  );
  try {
    await analyst.page.goto(url('budgets'));
    await analyst.page.locator('#budget-list').waitFor();
    t.is(await analyst.page.locator('#budget-form').count(), 0);
    const nav = await analyst.page.locator('nav a').allInnerTexts();
    t.true(nav.includes('Usage') && nav.includes('Budgets'), nav.join());
    t.false(nav.includes('Ledger') || nav.includes('Webhooks') || nav.includes('Integrations'), nav.join());
    await analyst.page.goto(url('usage'));
    await analyst.page.locator('#usage-table').waitFor();
    t.deepEqual(analyst.problems, []);
  } finally {
    await analyst.close();
  }
  const member = await signedInPage(
    browser,
    gw.server.url,
    await memberSession(gw.server.url, 'member@acme.example', PASSWORD),
    'desktop',
  );
  try {
    t.is((await member.page.goto(url('usage')))?.status(), 403);
    t.is(await member.page.locator('nav a[data-nav="usage"], nav a[data-nav="budgets"]').count(), 0);
    t.is(await member.page.locator('#usage-table').count(), 0);
  } finally {
    await member.close();
  }
});
