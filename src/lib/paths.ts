import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { getAsset, isSea } from 'node:sea';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

/** The package's root folder, whether this code runs from src/ (tsx) or from dist/. */
export function packageRoot(): string {
  if (root) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('package.json not found above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
  root = dir;
  return root;
}

/**
 * A file the package ships (`config/default.json`), by its path in the package: read from the
 * package folder, or, in the single executable, from the copy embedded in it at build time (the
 * build embeds every file it is asked for under the same name).
 */
export function readPackageFile(path: string): string {
  if (isSea()) return getAsset(path, 'utf8');
  return readFileSync(join(packageRoot(), path), 'utf8');
}
