/// <reference lib="dom" />
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { ROOT } from '../helpers/process.js';

/**
 * What the console's section tests share: Debian's chromium through playwright-core (never a
 * downloaded browser), a page per person and screen width with the session cookie set, the
 * page's own errors (uncaught errors, console errors: CSP violations among them), a check that
 * an element is really reachable on the screen, and screenshots under test/artifacts/.
 */

export const CHROMIUM = '/usr/bin/chromium';
export const ARTIFACTS = join(ROOT, 'test', 'artifacts');
export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

export async function launch(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing. The console's browser tests drive Debian's chromium (never a downloaded browser): ` +
        'install it with `apt-get update && apt-get install -y --no-install-recommends chromium` (.ci/run does this in CI).',
    );
  }
  await mkdir(ARTIFACTS, { recursive: true });
  return chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
}

export interface PersonPage {
  page: Page;
  /** Uncaught errors and console errors, but Chrome's "Failed to load resource" line for each 4xx. */
  errors(): string[];
  close(): Promise<void>;
}

/** A page in its own context, signed in with `cookie` (name=value), at the given screen size. */
export async function personPage(
  browser: Browser,
  url: string,
  cookie: string,
  viewport: { width: number; height: number },
): Promise<PersonPage> {
  const context = await browser.newContext({
    viewport,
    locale: 'en-GB',
    timezoneId: 'UTC',
    ...(viewport.width < 500 ? { isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : {}),
  });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: url });
  const [name, ...rest] = cookie.split('=');
  await context.addCookies([{ name: name!, value: rest.join('='), url }]);
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) errors.push(msg.text());
  });
  return { page, errors: () => errors, close: () => context.close() };
}

/**
 * Asserts a person can reach the element: visible, and its box inside the screen's width, or
 * inside a container that scrolls sideways; and the page itself never scrolls sideways.
 */
export async function assertReachable(t: ExecutionContext, locator: Locator, what: string): Promise<void> {
  await locator.scrollIntoViewIfNeeded();
  t.true(await locator.isVisible(), `${what} is visible`);
  const inside = await locator.evaluate((node) => {
    const box = node.getBoundingClientRect();
    const width = document.documentElement.clientWidth;
    if (box.left >= 0 && box.right <= width + 0.5) return true;
    for (let p = node.parentElement; p; p = p.parentElement) {
      const style = getComputedStyle(p);
      if ((style.overflowX === 'auto' || style.overflowX === 'scroll') && p.scrollWidth > p.clientWidth) return true;
    }
    return false;
  });
  t.true(inside, `${what} lies inside the screen's width`);
  const sideways = await locator
    .page()
    .evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  t.true(sideways <= 0, `the page does not scroll sideways (${sideways}px more than the screen)`);
}

/** The navigation as a person reads it: the labels, and the one marked as the current page. */
export async function navigation(page: Page): Promise<{ labels: string[]; current: string | null }> {
  const nav = page.locator('nav.sections-nav');
  const current = nav.locator('a[aria-current="page"]');
  return {
    labels: (await nav.locator('a').allTextContents()).map((s) => s.trim()),
    current: (await current.count()) === 0 ? null : await current.textContent(),
  };
}

export const screenshot = (page: Page, name: string) =>
  page.screenshot({ path: join(ARTIFACTS, name), fullPage: true });
