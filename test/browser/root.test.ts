import test from 'ava';
import type { Browser } from 'playwright-core';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { stopAndClean } from '../helpers/process.js';
import { launch } from './support.js';

/**
 * `GET /` in a real browser (issue 37 part 5): a person who opens the server's address lands on the
 * console's sign-in page, and the first start's one-time password signs in there. The redirect's
 * status and the JSON answer other clients get are in test/http/root.test.ts.
 */
let server: ServedInProcess;
let browser: Browser | undefined;

test.before(async () => {
  server = await serveInProcess();
});

test.after.always(async () => {
  await browser?.close();
  await stopAndClean(server);
});

test('chromium opening / lands on the sign-in page, where the one-time password signs in', async (t) => {
  browser = await launch();
  const page = await browser.newPage();
  page.setDefaultTimeout(15_000);
  try {
    await page.goto(`${server.url}/`);
    t.regex(page.url(), new RegExp(`^${server.url}/login`));
    await page.fill('#email', server.boot.owner!.email);
    await page.fill('#password', server.boot.owner!.password);
    await page.click('#signin button[type="submit"]');
    // Signed in with a one-time password: the page asks for the person's own.
    await page.locator('#new-password').waitFor({ state: 'visible' });
    t.true(await page.locator('#signin').isHidden());
  } finally {
    await page.close();
  }
});
