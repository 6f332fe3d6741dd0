import test from 'ava';
import { readFile } from 'node:fs/promises';
import { dirname, join, normalize } from 'node:path';
import { cycles, runtimeImports, sources } from '../helpers/imports.js';
import { ROOT } from '../helpers/process.js';

/**
 * The domain folders of src/ (agents, approvals, chat, oauth, people, …) import one another
 * without a circle at run time: what a domain does to another's records goes through a declared
 * contract given by app.ts (lib/principal-ended.ts, ledger subscribers), never through a value
 * import running back. Type-only imports do not count: they vanish at run time (the reader and
 * its own tests: helpers/imports.ts, here and gateway-cycles.test.ts).
 */

/** Folder-to-folder value imports of src/, with one file pair that makes each. */
async function folderGraph(): Promise<Map<string, Map<string, string>>> {
  const graph = new Map<string, Map<string, string>>();
  for (const file of await sources('src')) {
    const from = file.split('/')[1]!;
    if (from.endsWith('.ts')) continue; // app.ts, server.ts: the composition root
    for (const spec of runtimeImports(await readFile(join(ROOT, file), 'utf8'))) {
      const target = normalize(join(dirname(file), spec)).replace(/\.js$/, '.ts');
      const to = target.split('/')[1]!;
      if (!target.startsWith('src/') || to === from || to.endsWith('.ts')) continue;
      if (!graph.has(from)) graph.set(from, new Map());
      if (!graph.get(from)!.has(to)) graph.get(from)!.set(to, `${file} -> ${target}`);
    }
  }
  return graph;
}

test('the import reader tells value imports from type-only ones', (t) => {
  const text = [
    "import type { A } from './a.js';",
    "import { type B, type C } from '../b.js';",
    "import { d, type E } from '../d.js';",
    "export { f } from './f.js';",
    "export type { G } from './g.js';",
    "import x from 'external';",
    "import './side-effect.js';",
  ].join('\n');
  t.deepEqual(runtimeImports(text).sort(), ['../d.js', './f.js', './side-effect.js']);
  t.deepEqual(
    cycles(
      new Map([
        ['a', ['b']],
        ['b', ['a', 'c']],
        ['c', []],
      ]),
    ),
    [['a', 'b']],
  );
  t.deepEqual(
    cycles(
      new Map([
        ['a', ['b']],
        ['b', ['c']],
      ]),
    ),
    [],
  );
});

test('no run-time import circle between the domain folders of src/', async (t) => {
  const graph = await folderGraph();
  const edges = new Map([...graph].map(([from, tos]) => [from, [...tos.keys()]]));
  const found = cycles(edges);
  const arrows = [...graph.values()].reduce((n, tos) => n + tos.size, 0);
  t.log(`${graph.size} folders, ${arrows} folder-to-folder value imports, ${found.length} circles`);
  const explain = found.map((group) =>
    group.flatMap((from) => [...(graph.get(from) ?? [])].filter(([to]) => group.includes(to)).map(([, pair]) => pair)),
  );
  t.deepEqual(found, [], JSON.stringify(explain, null, 2));
});
