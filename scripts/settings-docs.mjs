// Writes docs/configuration.md's table of settings from their declarations (src/settings/):
// `node scripts/settings-docs.mjs` after a setting changes; test/settings/docs.test.ts fails
// until then.
import { readFileSync, writeFileSync } from 'node:fs';
import { tsImport } from 'tsx/esm/api';

const { withTable } = await tsImport('../src/settings/docs.ts', import.meta.url);
const page = new URL('../docs/configuration.md', import.meta.url);
const text = readFileSync(page, 'utf8');
const next = withTable(text);
if (next === null) throw new Error('docs/configuration.md has no settings table lines to write between');
if (next !== text) writeFileSync(page, next);
process.stdout.write(`docs/configuration.md: ${next === text ? 'the table is up to date' : 'table written'}\n`);
