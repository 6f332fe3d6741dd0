import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ROOT } from './process.js';

/**
 * Reading src/'s imports for the architecture tests (test/architecture/): the TypeScript files
 * under a folder, the relative modules a file needs at run time, and the cycles of a graph.
 */
export async function sources(dir: string): Promise<string[]> {
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

/** Every relative module a file imports, type-only ones included (a reader follows those too). */
export function allImports(text: string): string[] {
  const out: string[] = [];
  for (const m of code(text).matchAll(/^(?:import|export)\b[^;]*?(?:from\s*)?['"](\.[^'"]+)['"]/gm)) out.push(m[1]!);
  for (const m of code(text).matchAll(/import\s*\(\s*['"](\.[^'"]+)['"]/g)) out.push(m[1]!);
  return out;
}

export interface ImportEdge {
  from: string;
  to: string;
  /** Which file imports which, for a reader of a failure. */
  pair: string;
}

/**
 * Floors of a graph of units (each edge one import): a unit stands above every unit it imports.
 * Units in a circle are ordered so that the fewest imports run up (tried in every order for a
 * circle of up to 8 units, greedily for a larger one); those imports are `upward`. `order` lists
 * the floors bottom first, each floor's units sorted.
 */
export function floors(edges: readonly ImportEdge[]): { order: string[][]; upward: ImportEdge[] } {
  const nodes = [...new Set(edges.flatMap((e) => [e.from, e.to]))].sort();
  const weight = new Map<string, number>();
  const key = (a: string, b: string) => `${a}\u0000${b}`;
  for (const e of edges) weight.set(key(e.from, e.to), (weight.get(key(e.from, e.to)) ?? 0) + 1);
  const out = new Map<string, string[]>(nodes.map((n) => [n, []]));
  for (const e of edges) if (!out.get(e.from)!.includes(e.to)) out.get(e.from)!.push(e.to);
  // Units in a circle, each circle in its best order, bottom first.
  const position = new Map<string, number>();
  for (const circle of cycles(out)) {
    const upCost = (order: string[]) => {
      let cost = 0;
      for (let i = 0; i < order.length; i++)
        for (let j = i + 1; j < order.length; j++) cost += weight.get(key(order[i]!, order[j]!)) ?? 0;
      return cost;
    };
    let best: string[];
    if (circle.length <= 8) {
      best = circle;
      let bestCost = Infinity;
      const permute = (done: string[], rest: string[]) => {
        if (rest.length === 0) {
          const cost = upCost(done);
          if (cost < bestCost) [best, bestCost] = [done, cost];
          return;
        }
        for (const [i, n] of rest.entries()) permute([...done, n], [...rest.slice(0, i), ...rest.slice(i + 1)]);
      };
      permute([], circle);
    } else {
      // Bottom first: the unit that imports the least of what is left goes next.
      best = [];
      const left = new Set(circle);
      while (left.size > 0) {
        const next = [...left].sort(
          (a, b) =>
            [...left].reduce((n, o) => n + (weight.get(key(a, o)) ?? 0), 0) -
              [...left].reduce((n, o) => n + (weight.get(key(b, o)) ?? 0), 0) || a.localeCompare(b),
        )[0]!;
        best.push(next);
        left.delete(next);
      }
    }
    best.forEach((n, i) => position.set(n, i));
  }
  const runsUp = (e: ImportEdge) =>
    position.has(e.from) &&
    position.has(e.to) &&
    cycles(out).some((c) => c.includes(e.from) && c.includes(e.to)) &&
    position.get(e.from)! < position.get(e.to)!;
  const upward = edges.filter(runsUp);
  // Levels over what is left (no circle remains): a unit is one above the highest it imports.
  const kept = new Map<string, string[]>(
    nodes.map((n) => [n, out.get(n)!.filter((to) => !upward.some((u) => u.from === n && u.to === to))]),
  );
  const level = new Map<string, number>();
  const levelOf = (n: string): number => {
    if (!level.has(n))
      level.set(
        n,
        kept.get(n)!.reduce((max, to) => Math.max(max, levelOf(to) + 1), 0),
      );
    return level.get(n)!;
  };
  const order: string[][] = [];
  for (const n of nodes) (order[levelOf(n)] ??= []).push(n);
  return { order: order.filter(Boolean), upward };
}
