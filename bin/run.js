#!/usr/bin/env node
import { fileURLToPath } from 'node:url';

// oclif checks its own package's Node range with semver on load (some fifty modules, for every
// command); svc's Node range is package.json's engines, and Node 22+ is needed to get this far.
process.env.OCLIF_DISABLE_ENGINE_WARNING ??= '1';
const { start } = await import('../dist/src/cli/start.js');
await start({ root: fileURLToPath(new URL('..', import.meta.url)), argv: process.argv.slice(2) });
