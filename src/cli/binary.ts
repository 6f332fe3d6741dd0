import { dirname } from 'node:path';
import { settings, type Interfaces } from '@oclif/core';
import { PACKAGE } from './generated/build.js';
import { run } from './main.js';

/**
 * The single executable's entry (scripts/build-binary.mjs bundles from here). It holds no
 * package.json, no TypeScript sources and no node_modules, so oclif is given the package.json
 * fields baked in at build time, never looks for TypeScript to transpile, and loads its commands
 * and hooks from the bundle (the build swaps oclif's module loader for a table of the bundled
 * modules that package.json names).
 */
settings.enableAutoTranspile = false;
void run({ root: dirname(process.execPath), pjson: PACKAGE as unknown as Interfaces.PJSON });
