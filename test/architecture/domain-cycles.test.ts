import test from 'ava';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, normalize } from 'node:path';
import { ROOT } from '../helpers/process.js';

/**
 * The domain folders of src/ (agents, approvals, chat, oauth, people, …) import one another
 * without a circle at run time: what a domain does to another's records goes through a declared
 * contract given by app.ts (lib/principal-ended.ts, ledger subscribers), never through a value
 * import running back. Type-only imports do not count: they vanish at run time.
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

/** The relative modules `text` imports or re-exports as values (not `import type`, not all-`type` braces). */
export function valueImports(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^(?:import|export)\s+(type\s+)?([^;'"]*?)\s*from\s+['"](\.[^'"]+)['"]/gms)) {
    if (m[1]) continue;
    const names = m[2]!.trim();
    const braces = /^\{([^}]*)\}$/.exec(names);
    if (braces) {
      const parts = braces[1]!
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean);
      if (parts.length > 0 && parts.every((p) => p.startsWith('type '))) continue;
    }
    out.push(m[3]!);
  }
  for (const m of text.matchAll(/^import\s+['"](\.[^'"]+)['"]/gm)) out.push(m[1]!);
  return out;
}

/** Folder-to-folder value imports of src/, with one file pair that makes each. */
async function folderGraph(): Promise<Map<string, Map<string, string>>> {
  const graph = new Map<string, Map<string, string>>();
  for (const file of await sources('src')) {
    const from = file.split('/')[1]!;
    if (from.endsWith('.ts')) continue; // app.ts, server.ts: the composition root
    for (const spec of valueImports(await readFile(join(ROOT, file), 'utf8'))) {
      const target = normalize(join(dirname(file), spec)).replace(/\.js$/, '.ts');
      const to = target.split('/')[1]!;
      if (!target.startsWith('src/') || to === from || to.endsWith('.ts')) continue;
      if (!graph.has(from)) graph.set(from, new Map());
      if (!graph.get(from)!.has(to)) graph.get(from)!.set(to, `${file} -> ${target}`);
    }
  }
  return graph;
}

/** The strongly connected groups of more than one node (Tarjan). */
export function circles(edges: Map<string, Iterable<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) found.push(group.sort());
    }
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return found;
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
  t.deepEqual(valueImports(text).sort(), ['../d.js', './f.js', './side-effect.js']);
  t.deepEqual(
    circles(
      new Map([
        ['a', ['b']],
        ['b', ['a', 'c']],
        ['c', []],
      ]),
    ),
    [['a', 'b']],
  );
  t.deepEqual(
    circles(
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
  const found = circles(edges);
  const arrows = [...graph.values()].reduce((n, tos) => n + tos.size, 0);
  t.log(`${graph.size} folders, ${arrows} folder-to-folder value imports, ${found.length} circles`);
  const explain = found.map((group) =>
    group.flatMap((from) => [...(graph.get(from) ?? [])].filter(([to]) => group.includes(to)).map(([, pair]) => pair)),
  );
  t.deepEqual(found, [], JSON.stringify(explain, null, 2));
});
