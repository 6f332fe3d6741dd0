import { dirname } from 'node:path';
import type { Interfaces } from '@oclif/core';
import { PACKAGE } from './generated/build.js';
import { start } from './start.js';

/**
 * The single executable's entry (scripts/build-binary.mjs bundles from here). It holds no
 * package.json, no TypeScript sources and no node_modules, so oclif is given the package.json
 * fields baked in at build time, never looks for TypeScript to transpile, and loads its commands
 * and hooks from the bundle (the build swaps oclif's module loader for a table of the bundled
 * modules that those fields name). `svc --version` answers before oclif is even initialized.
 */
void start({
  root: dirname(process.execPath),
  argv: process.argv.slice(2),
  pjson: PACKAGE as unknown as Interfaces.PJSON,
});
