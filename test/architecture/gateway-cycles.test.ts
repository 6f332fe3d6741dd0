import test from 'ava';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, normalize } from 'node:path';
import { ROOT } from '../helpers/process.js';

/**
 * The gateway folder (src/gateway) has no run-time import cycle (issue 35 part 5): the failover
 * rule (failover.ts) and the pivot translations (pivot.ts) import no adapter, the adapters
 * (vendors/) import no route module, and a vendor's stream reader imports nothing of its adapter.
 * A cycle made of `import type` only is erased at compile time and allowed; every other import
 * (a value, a re-export, a dynamic import) counts. Imports are read as layers.test.ts reads them.
 */
async function sources(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(join(ROOT, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await sources(path)));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** The text without comments (block comments, and lines that are a // comment). */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');

/** The relative modules a file needs at run time: not `import type` / `export type` statements. */
export function runtimeImports(text: string): string[] {
  const out: string[] = [];
  for (const m of code(text).matchAll(/^(import|export)\b([^;]*?)(?:from\s*)?['"](\.[^'"]+)['"]/gm)) {
    if (/^\s+type\s*[{*]/.test(m[2]!)) continue;
    // `import { type A, type B } from` is erased too.
    const named = /^\s*\{([^}]*)\}\s*$/.exec(m[2]!);
    if (named && named[1]!.split(',').every((n) => n.trim() === '' || /^type\s/.test(n.trim()))) continue;
    out.push(m[3]!);
  }
  for (const m of code(text).matchAll(/import\s*\(\s*['"](\.[^'"]+)['"]/g)) out.push(m[1]!);
  return out;
}

/** Every cycle's files, one list per strongly connected component of more than one file (or a file importing itself). */
export function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let index = 0;
  const at = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    at.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!at.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, at.get(w)!));
    }
    if (low.get(v) === at.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!at.has(v)) visit(v);
  return found;
}

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
