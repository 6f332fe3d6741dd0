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
