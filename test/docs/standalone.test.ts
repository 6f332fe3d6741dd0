import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { entryOf, errorTypes } from '../../src/errors/catalogue.js';
import { errorsDocsPage } from '../../src/errors/docs-page.js';
import { ROOT } from '../helpers/process.js';
import { anchors } from './markdown.js';

/**
 * The documentation stands alone: no page, no code comment and no text the product shows (--help,
 * errors, the errors page, the console) names a file a reader of the checkout does not have (the
 * planning documents kept outside it). What a reader needs is written in docs/ itself, and a
 * comment that sends the reader somewhere names a docs page (and heading) that exists.
 */
const OUTSIDE = /\b(SPEC|API|STYLE)\.md\b/;
/** A pointer into the docs from code: `docs/gate.md` or `docs/gate.md#the-gate`. */
const POINTER = /\bdocs\/([a-z0-9-]+\.md)(?:#([\p{L}\p{N}_-]+))?/gu;

/** Where product text and code comments live: every source, command, script and setting in git. */
const SOURCES = ['src', 'commands', 'scripts', 'bin', 'config', 'test/helpers'];
const FILES = ['package.json', 'Dockerfile', 'tsconfig.json'];
/** Written by the build, not in git. */
const SKIP = new Set(['src/cli/generated']);

function sourceFiles(): string[] {
  const out: string[] = [];
  const walk = (rel: string): void => {
    if (SKIP.has(rel)) return;
    const abs = join(ROOT, rel);
    if (statSync(abs).isDirectory()) for (const name of readdirSync(abs)) walk(`${rel}/${name}`);
    else if (/\.(ts|mts|js|mjs|cjs|json|css|html|sh)$/.test(rel)) out.push(rel);
  };
  for (const dir of SOURCES) walk(dir);
  return [...out, ...FILES.filter((f) => existsSync(join(ROOT, f)))];
}

function lines(path: string): { at: string; line: string }[] {
  return readFileSync(join(ROOT, path), 'utf8')
    .split('\n')
    .map((line, i) => ({ at: `${path}:${i + 1}`, line }));
}

/** The citations of files outside the checkout in these lines, as `path:line`. */
function citations(found: { at: string; line: string }[]): string[] {
  return found.filter(({ line }) => OUTSIDE.test(line)).map(({ at }) => at);
}

/** The docs pointers in these lines that name no page, or a heading the page does not have. */
function brokenPointers(found: { at: string; line: string }[]): string[] {
  const headings = new Map<string, Set<string> | null>();
  const headingsOf = (page: string): Set<string> | null => {
    if (!headings.has(page)) {
      const file = join(ROOT, 'docs', page);
      headings.set(page, existsSync(file) ? anchors(readFileSync(file, 'utf8')) : null);
    }
    return headings.get(page)!;
  };
  const broken: string[] = [];
  for (const { at, line } of found)
    for (const [pointer, page, anchor] of line.matchAll(POINTER)) {
      const known = headingsOf(page!);
      if (known === null || (anchor !== undefined && !known.has(anchor))) broken.push(`${at} ${pointer}`);
    }
  return broken;
}

test('no docs page and no README cites a file outside the checkout', (t) => {
  const pages = [
    'README.md',
    ...readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  t.true(pages.length > 5);
  t.deepEqual(citations(pages.flatMap(lines)), []);
});

test('no code comment, --help text, error message or console text in the sources cites a file outside the checkout', (t) => {
  const files = sourceFiles();
  // The sources the product's texts come from are all read: commands (--help), the catalogue, the console.
  for (const must of ['package.json', 'commands/serve.ts', 'src/errors/catalogue.ts', 'src/console/pages.ts'])
    t.true(files.includes(must), must);
  t.true(files.length > 300, `${files.length} files`);
  t.deepEqual(citations(files.flatMap(lines)), []);
});

test('every docs page a source points to exists, with the heading it names', (t) => {
  const found = sourceFiles().flatMap(lines);
  t.true(
    found.some(({ line }) => /docs\/[a-z-]+\.md#/.test(line)),
    'sources point into the docs',
  );
  t.deepEqual(brokenPointers(found), []);
});

test('the errors page names, for every type, a docs page and heading that exist, and cites nothing outside', (t) => {
  const broken = errorTypes
    .map((type) => ({ at: type, line: `docs/${entryOf(type).section}` }))
    .filter(({ line }) => !/^docs\/[a-z0-9-]+\.md#[a-z0-9-]+$/.test(line) || brokenPointers([{ at: '', line }]).length);
  t.deepEqual(broken, []);
  const page = errorsDocsPage();
  t.false(OUTSIDE.test(page));
  t.regex(page, /Described in <code>docs\/gate\.md#the-gate<\/code> of svc's documentation/);
});

test('the checks see a citation and a pointer to a page or heading that is not there', (t) => {
  const sample = [
    { at: 'a:1', line: ' * Agent key (SPEC.md 5.2): bound to one agent.' },
    { at: 'a:2', line: "  limits: schema.description('per minute (API.md 9)')," },
    { at: 'a:3', line: '// Caches (STYLE.md rule 7)' },
    { at: 'a:4', line: ' * The gate (docs/gate.md#the-gate), receipts (docs/gate.md).' },
    { at: 'a:5', line: ' * Gone (docs/nowhere.md), no heading (docs/gate.md#no-such-heading).' },
  ];
  t.deepEqual(citations(sample), ['a:1', 'a:2', 'a:3']);
  t.deepEqual(brokenPointers(sample), ['a:5 docs/nowhere.md', 'a:5 docs/gate.md#no-such-heading']);
});
