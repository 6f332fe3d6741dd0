import test from 'ava';
import { readFile } from 'node:fs/promises';
import { dirname, join, normalize } from 'node:path';
import { cycles, runtimeImports, sources } from '../helpers/imports.js';
import { ROOT } from '../helpers/process.js';

/**
 * The gateway folder (src/gateway) has no run-time import cycle (issue 35 part 5): the failover
 * rule (failover.ts) and the pivot translations (pivot.ts) import no adapter, the adapters
 * (vendors/) import no route module, and a vendor's stream reader imports nothing of its adapter.
 * A cycle made of `import type` only is erased at compile time and allowed; every other import
 * (a value, a re-export, a dynamic import) counts. Imports are read as layers.test.ts reads them.
 */
test('src/gateway has no run-time import cycle', async (t) => {
  const files = await sources('src/gateway');
  t.true(files.length > 40, 'the scan found the gateway');
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = await readFile(join(ROOT, file), 'utf8');
    graph.set(
      file,
      runtimeImports(text).map((spec) => normalize(join(dirname(file), spec)).replace(/\.js$/, '.ts')),
    );
  }
  t.true(
    (graph.get('src/gateway/forward.ts') ?? []).includes('src/gateway/vendors/index.ts'),
    'the scan sees the attempt import the adapters',
  );
  for (const vendor of ['bedrock', 'gemini'])
    t.true(
      (graph.get(`src/gateway/vendors/${vendor}.ts`) ?? []).includes(`src/gateway/vendors/${vendor}-stream.ts`),
      `the scan sees the ${vendor} adapter import its stream reader (which must not import it back)`,
    );
  const found = cycles(graph);
  t.deepEqual(
    found,
    [],
    `these files import each other at run time:\n  ${found.map((c) => c.join(' <-> ')).join('\n  ')}`,
  );
});

test('the cycle check tells run-time imports from type-only ones, and finds a cycle', (t) => {
  t.deepEqual(
    runtimeImports(
      [
        "import type { A } from './a.js';",
        "import { type B, type C } from './b.js';",
        "import { d, type D } from './d.js';",
        "export { e } from './e.js';",
        "export type { F } from './f.js';",
        "// import { g } from './g.js';",
        "const h = await import('./h.js');",
      ].join('\n'),
    ),
    ['./d.js', './e.js', './h.js'],
  );
  const graph = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a']],
    ['d', ['a']],
    ['e', ['e']],
  ]);
  t.deepEqual(cycles(graph), [['a', 'b', 'c'], ['e']]);
  t.deepEqual(
    cycles(
      new Map([
        ['a', ['b']],
        ['b', []],
      ]),
    ),
    [],
  );
});
