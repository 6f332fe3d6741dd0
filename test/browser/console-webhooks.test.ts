import test from 'ava';
import { existsSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { call } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { startReceiver, until } from '../helpers/receiver.js';
import { poll } from '../helpers/wait.js';
import { clipped, launch, screenshot, signedInPage, WIDTHS, type Width } from './reports-support.js';

/**
 * The webhooks and integrations sections in a real browser (issue 21 item 4), at desktop and
 * phone widths. An owner adds an endpoint with the form (its secret shown once) for a loopback
 * receiver; the receiver fails, the delivery is given up and appears in the log as failed with
 * the receiver's HTTP 500 and the endpoint disabled; "Redeliver" against the recovered receiver
 * delivers it, signed with that secret. The integrations page counts an inbound request refused
 * for its bad signature.
 */
let server: ServedInProcess;
let browser: Browser;
let owner: Person;
let secret = '';
const receiver = await startReceiver(() => secret);

test.before(async () => {
  server = await serveInProcess({
    env: {
      SVC_SIGNIN_RATE_PER_MINUTE: '1000',
      SVC_WEBHOOKS_ALLOW_PRIVATE_TARGETS: '1',
      SVC_WEBHOOKS_TIMEOUT_MS: '500',
      SVC_WEBHOOKS_BACKOFF_BASE_MS: '50',
      SVC_WEBHOOKS_BACKOFF_MAX_MS: '100',
      SVC_WEBHOOKS_DISPATCH_INTERVAL_MS: '20',
      // A failing delivery is given up quickly, so that the log shows it failed.
      SVC_WEBHOOKS_GIVE_UP_AFTER_MS: '300',
    },
  });
  owner = await ownerConsole(server);
  browser = await launch();
});

test.after.always(async () => {
  await browser?.close();
  await stopAndClean(server);
  await receiver.close();
});

const url = (section: string) => `${server.url}/console/${section}?w=${owner.wid}`;

test.serial('desktop: add an endpoint, see a failed delivery in its log, redeliver it', async (t) => {
  t.timeout(90_000);
  const { page, problems, close } = await signedInPage(browser, server.url, owner.cookie, 'desktop');
  try {
    t.is((await page.goto(url('webhooks')))?.status(), 200);
    await page.locator('#webhooks-empty').waitFor();
    await page.fill('#webhook-url', receiver.url);
    await page.check('input[name=event][value="agent.stopped"]');
    await page.click('#webhook-add');
    await page.locator('#webhook-secret-value').waitFor();
    secret = (await page.locator('#webhook-secret-value').textContent()) ?? '';
    t.regex(secret, /^whs_/);
    const endpoint = page.locator('li[data-endpoint]');
    await endpoint.waitFor();
    const id = await endpoint.getAttribute('data-endpoint');
    t.true((await endpoint.innerText()).includes(receiver.url));
    t.true((await endpoint.innerText()).includes('agent.stopped'));

    // The receiver fails every try: the delivery is given up and the endpoint disabled.
    receiver.state.mode = 'fail';
    const agent = expectStatus(
      await owner.send('POST', '/agents', { name: 'hooked-bot', actsFor: owner.id }),
      201,
      'a',
    );
    expectStatus(await owner.send('POST', `/agents/${agent.body.id}/stop`, { reason: 'webhook test' }), 200, 'stop');
    const failed = await poll(
      async () => (await owner.get(`/webhooks/${id}/deliveries`)).body.data[0]?.status,
      (s) => s === 'failed',
    );
    t.is(failed, 'failed');
    t.true(receiver.state.received.some((r) => r.status === 500 && r.verified));

    await page.click('#refresh');
    await endpoint.getByRole('button', { name: 'Deliveries' }).click();
    const row = page.locator('tr[data-delivery]');
    await row.waitFor();
    const text = await row.innerText();
    t.true(text.includes('agent.stopped'), text);
    t.true(text.includes('Failed'), text);
    t.true(text.includes('HTTP 500'), text);
    t.true((await endpoint.innerText()).includes('Disabled'));

    // Redeliver against the recovered receiver: delivered, signed, the endpoint active again.
    receiver.state.mode = 'ok';
    await row.getByRole('button', { name: 'Redeliver' }).click();
    await page.locator('#status', { hasText: 'Delivery of agent.stopped sent again.' }).waitFor();
    await until('the redelivery', () => receiver.state.received.some((r) => r.status === 200));
    t.true(
      receiver.state.received.filter((r) => r.status === 200).every((r) => r.verified && r.type === 'agent.stopped'),
    );
    const shown = await poll(
      async () => {
        await page.click('#refresh');
        return page.locator('tr[data-delivery]').getAttribute('data-state');
      },
      (state) => state === 'delivered',
    );
    t.is(shown, 'delivered');
    t.true((await row.innerText()).includes('HTTP 200'));
    t.true((await endpoint.innerText()).includes('Active'));
    t.true(existsSync(await screenshot(page, 'console-webhooks-desktop')));
    t.deepEqual(problems, []);
  } finally {
    await close();
  }
});

test.serial('phone: the delivery log and its buttons fit a 390 px screen', async (t) => {
  t.timeout(60_000);
  const { page, problems, close } = await signedInPage(browser, server.url, owner.cookie, 'phone');
  try {
    await page.goto(url('webhooks'));
    const endpoint = page.locator('li[data-endpoint]');
    await endpoint.getByRole('button', { name: 'Deliveries' }).click();
    await page.locator('tr[data-delivery]').waitFor();
    t.true((await page.locator('tr[data-delivery]').innerText()).includes('Delivered'));
    t.deepEqual(await clipped(page, 'li[data-endpoint] button, tr[data-delivery] button, #webhook-add, nav a'), []);
    t.true(existsSync(await screenshot(page, 'console-webhooks-phone')));

    // Removing asks first, then the endpoint is gone.
    await endpoint.getByRole('button', { name: 'Remove…' }).click();
    await endpoint.getByRole('button', { name: 'Remove', exact: true }).click();
    await page.locator('#webhooks-empty').waitFor();
    t.deepEqual((await owner.get('/webhooks')).body.data, []);
    t.deepEqual(problems, []);
  } finally {
    await close();
  }
});

for (const width of Object.keys(WIDTHS) as Width[]) {
  test.serial(`${width}: integrations show each one set up and its refused requests`, async (t) => {
    t.timeout(60_000);
    if (width === 'desktop')
      expectStatus(await owner.send('PUT', '/integrations/issuer', {}), 200, 'issuer integration');
    // A delivery with a wrong signature: refused, and counted.
    const refused = await call(server.url, 'POST', `/v1/hooks/issuer/${owner.wid}`, {
      headers: {
        'content-type': 'application/json',
        'svc-signature': `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}`,
      },
      body: '{"id":"evt_1"}',
    });
    t.is(refused.status, 401);
    const expected = width === 'desktop' ? '1' : '2';
    const { page, problems, close } = await signedInPage(browser, server.url, owner.cookie, width);
    try {
      t.is((await page.goto(url('integrations')))?.status(), 200);
      const row = page.locator('li[data-kind="issuer"]');
      await row.waitFor();
      t.is(await row.locator('.refused').textContent(), expected);
      const text = await row.innerText();
      t.true(text.includes('Card issuer'), text);
      t.true(text.includes(`/v1/hooks/issuer/${owner.wid}`), text);
      t.true(text.includes('Created'), text);
      t.deepEqual(await clipped(page, 'nav a, #refresh'), []);
      t.true(existsSync(await screenshot(page, `console-integrations-${width}`)));
      t.deepEqual(problems, []);
    } finally {
      await close();
    }
  });
}
