import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { ROOT } from '../helpers/process.js';

/**
 * The documentation stands alone: no page names a file a reader of the checkout does not have
 * (the planning documents kept outside it). What a reader needs is written in docs/ itself.
 */
const OUTSIDE = /\b(SPEC|API|STYLE)\.md\b/;

test('no docs page and no README cites a file outside the checkout', (t) => {
  const pages = [
    join(ROOT, 'README.md'),
    ...readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => join(ROOT, 'docs', f)),
  ];
  const cited = pages.flatMap((page) =>
    readFileSync(page, 'utf8')
      .split('\n')
      .map((line, i) => ({ at: `${page.slice(ROOT.length + 1)}:${i + 1}`, line }))
      .filter(({ line }) => OUTSIDE.test(line))
      .map(({ at }) => at),
  );
  t.true(pages.length > 5);
  t.deepEqual(cited, []);
});
