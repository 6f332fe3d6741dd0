import test from 'ava';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, normalize } from 'node:path';
import ts from 'typescript';
import { allImports, cycles, floors, runtimeImports, sources } from '../helpers/imports.js';
import { ROOT } from '../helpers/process.js';

/**
 * The shape of src/, counted and printed: a reader finds one owner per table, declared contracts,
 * files that stand above what they import, functions that fit on a few screens, and a test folder
 * for every domain. Each test logs its figure, so a change that moves one shows it.
 */

const text = (file: string) => readFile(join(ROOT, file), 'utf8');
const resolve = (file: string, spec: string) => normalize(join(dirname(file), spec)).replace(/\.js$/, '.ts');
/** A file's unit on the floors: its top-level folder, or the file itself at src/'s top. */
const unit = (file: string) => {
  const part = file.split('/')[1]!;
  return part.endsWith('.ts') ? part.replace(/\.ts$/, '') : part;
};

test('no run-time import circle between any two files of src/', async (t) => {
  const graph = new Map<string, string[]>();
  for (const file of await sources('src'))
    graph.set(
      file,
      runtimeImports(await text(file)).map((spec) => resolve(file, spec)),
    );
  t.true(graph.size > 200, 'the scan found the sources');
  const found = cycles(graph);
  t.log(`${graph.size} files, ${found.length} run-time circles`);
  t.deepEqual(
    found,
    [],
    `these files import each other at run time:\n  ${found.map((c) => c.join(' <-> ')).join('\n  ')}`,
  );
});

/**
 * Floors: each top-level folder of src/ (and each file at its top: app.ts, server.ts) stands on a
 * floor above every unit it imports. Where units import each other in a circle (type-only imports
 * count here: a reader follows them too), the order of the circle is the one with the fewest
 * imports running back up. The store's table registry (store/tables.ts) names every domain's
 * record type by design and is set aside.
 */
test('src/ stands in floors: at most 3 imports run from a lower floor to a higher one', async (t) => {
  const edges: Array<{ from: string; to: string; pair: string }> = [];
  for (const file of await sources('src')) {
    if (file === 'src/store/tables.ts') continue;
    for (const spec of allImports(await text(file))) {
      const target = resolve(file, spec);
      if (!target.startsWith('src/') || unit(target) === unit(file)) continue;
      edges.push({ from: unit(file), to: unit(target), pair: `${file} -> ${target}` });
    }
  }
  const { order, upward } = floors(edges);
  t.log(`${order.length} floors, bottom first: ${order.map((f) => f.join('+')).join(' < ')}`);
  t.log(`${upward.length} imports run up a floor:\n  ${upward.map((e) => e.pair).join('\n  ')}`);
  t.true(upward.length <= 3, `${upward.length} imports run up a floor`);
});

/** Functions (declarations, methods, arrows) of more than `limit` lines, longest first. */
function longFunctions(file: string, source: string, limit: number): string[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true);
  const out: Array<[number, string]> = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && (node as ts.FunctionLikeDeclaration).body) {
      const first = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      const named = (node as ts.FunctionLikeDeclaration).name ?? (node.parent as { name?: ts.Node }).name;
      if (last - first + 1 > limit)
        out.push([
          last - first + 1,
          `${file}:${first + 1} ${named?.getText(sf) ?? '(anonymous)'} ${last - first + 1} lines`,
        ]);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out.sort((a, b) => b[0] - a[0]).map(([, s]) => s);
}

test('no function in src/ is over 200 lines', async (t) => {
  const long: string[] = [];
  for (const file of await sources('src')) long.push(...longFunctions(file, await text(file), 200));
  t.log(`${long.length} functions over 200 lines${long.length ? `:\n  ${long.join('\n  ')}` : ''}`);
  t.deepEqual(long, []);
});

test('the length count sees a long function, a long arrow and a long method', (t) => {
  const body = Array.from({ length: 201 }, (_, i) => `  const v${i} = ${i};`).join('\n');
  const source = `function a() {\n${body}\n}\nconst b = () => {\n${body}\n};\nclass C { m() {\n${body}\n} }\nfunction short() { return 1; }\n`;
  t.deepEqual(
    longFunctions('x.ts', source, 200).map((s) => s.split(' ')[1]),
    ['a', 'b', 'm'],
  );
});

test("every service declares its contract: no ReturnType<typeof create…> as a service's type", async (t) => {
  const found: string[] = [];
  for (const file of await sources('src'))
    for (const [i, line] of (await text(file)).split('\n').entries())
      if (/ReturnType<\s*typeof\s+(create|open|build|make)\w*\s*>/.test(line)) found.push(`${file}:${i + 1}`);
  t.log(`${found.length} services typed by inference`);
  t.deepEqual(found, []);
});

/** Folders of src/ that are not a domain: shared code, the framework edges, the store. */
const NOT_DOMAINS = new Set(['lib', 'errors', 'settings', 'store', 'http', 'cli']);

test('every domain folder of src/ has its test folder', async (t) => {
  const folders = (await readdir(join(ROOT, 'src'), { withFileTypes: true }))
    .filter((e) => e.isDirectory() && !NOT_DOMAINS.has(e.name))
    .map((e) => e.name);
  const missing: string[] = [];
  for (const folder of folders) {
    const tests = await sources(`test/${folder}`).catch(() => []);
    if (!tests.some((f) => f.endsWith('.test.ts'))) missing.push(`test/${folder}/`);
  }
  t.log(`${folders.length} domain folders; without a test folder: ${missing.join(', ') || 'none'}`);
  t.deepEqual(missing, []);
});

test('the floors put a unit above what it imports, and count the fewest imports running back up', (t) => {
  const e = (from: string, to: string, n = 1) =>
    Array.from({ length: n }, () => ({ from, to, pair: `${from}->${to}` }));
  // a imports b, b imports c: three floors, nothing running up.
  t.deepEqual(floors([...e('a', 'b'), ...e('b', 'c')]), { order: [['c'], ['b'], ['a']], upward: [] });
  // x and y import each other, x→y five times and y→x once: y stands below x; one import runs up.
  const circle = floors([...e('x', 'y', 5), ...e('y', 'x')]);
  t.deepEqual(
    circle.upward.map((u) => u.pair),
    ['y->x'],
  );
});

test('the import reader sees type-only imports as imports', (t) => {
  t.deepEqual(
    allImports(
      ["import type { A } from './a.js';", "import { b } from '../b.js';", "export type { C } from './c.js';"].join(
        '\n',
      ),
    ).sort(),
    ['../b.js', './a.js', './c.js'],
  );
});
