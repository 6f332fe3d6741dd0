import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { call, csrf, signIn } from '../helpers/http.js';
import { ROOT } from '../helpers/process.js';
import { poll } from '../helpers/wait.js';

/**
 * What the browser tests of the report sections (ledger, usage, budgets, webhooks, integrations)
 * share: Debian's chromium through playwright-core (never a downloaded browser), a signed-in page
 * at desktop or phone width that records what the page reported (uncaught errors, console errors,
 * CSP violations among them), a check that nothing is cut off at the side of a phone screen, and
 * screenshots under test/artifacts/.
 */
export const CHROMIUM = '/usr/bin/chromium';
export const ARTIFACTS = join(ROOT, 'test', 'artifacts');
export const WIDTHS = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } } as const;
export type Width = keyof typeof WIDTHS;

export async function launch(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y --no-install-recommends chromium); .ci/run does this in CI.`,
    );
  await mkdir(ARTIFACTS, { recursive: true });
  return chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
}

export interface ReportPage {
  page: Page;
  /** Uncaught errors, console errors and CSP violations the page reported. */
  problems: string[];
  close(): Promise<void>;
}

/** A page in its own context at `width`, carrying `cookie` (`name=value`, from signIn) for `url`. */
export async function signedInPage(browser: Browser, url: string, cookie: string, width: Width): Promise<ReportPage> {
  const context = await browser.newContext({ viewport: WIDTHS[width], locale: 'en-GB', timezoneId: 'UTC' });
  const [name, ...rest] = cookie.split('=');
  await context.addCookies([{ name: name!, value: rest.join('='), url }]);
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console: ${msg.text()}`);
  });
  // A CSP violation is also reported to the page as an event: logged as an error, so none goes unseen.
  await page.addInitScript(
    "document.addEventListener('securitypolicyviolation', function (e) { console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI); });",
  );
  return { page, problems, close: () => context.close() };
}

/**
 * Nothing a person needs is cut off at the side: the page does not scroll sideways, and each
 * element `selector` matches lies inside the viewport or inside a container that scrolls sideways
 * (a wide table in its .table-wrap). Returns the problems found (none: an empty list).
 */
export async function clipped(page: Page, selector: string): Promise<string[]> {
  // Browser code as text: the tests are compiled without the DOM's types.
  return page.evaluate(`(function (sel) {
    var out = [];
    var width = document.documentElement.clientWidth;
    if (document.documentElement.scrollWidth > width + 1)
      out.push('the page scrolls sideways: ' + document.documentElement.scrollWidth + ' > ' + width);
    Array.from(document.querySelectorAll(sel)).forEach(function (node) {
      var box = node.getBoundingClientRect();
      if (box.width === 0 && box.height === 0) return;
      if (box.left >= -1 && box.right <= width + 1) return;
      var scroller = node.parentElement;
      while (scroller && !(scroller.scrollWidth > scroller.clientWidth && getComputedStyle(scroller).overflowX !== 'visible'))
        scroller = scroller.parentElement;
      if (!scroller || scroller === document.documentElement || scroller === document.body)
        out.push(sel + ' "' + (node.textContent || '').trim().slice(0, 40) + '" lies at ' + box.left + '..' + box.right + ' of ' + width);
    });
    return out;
  })(${JSON.stringify(selector)})`);
}

/** Waits until `selector` matches exactly `n` elements (10 s at most); answers how many it last matched. */
export async function rowsAre(page: Page, selector: string, n: number): Promise<number> {
  return poll(
    () => page.locator(selector).count(),
    (count) => count === n,
  );
}

/**
 * Signs in a member an owner added (with a one-time password), replaces that password as the
 * console requires before anything else, and signs in again: the session cookie (`name=value`).
 */
export async function memberSession(url: string, email: string, password: string): Promise<string> {
  const first = await signIn(url, email, password);
  const changed = await call(url, 'PUT', '/api/me/password', {
    headers: { ...csrf, cookie: first },
    json: { currentPassword: password, newPassword: `${password}-own` },
  });
  if (changed.status !== 200) throw new Error(`password change of ${email}: ${changed.status} ${changed.text}`);
  return signIn(url, email, `${password}-own`);
}

export async function screenshot(page: Page, name: string): Promise<string> {
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
