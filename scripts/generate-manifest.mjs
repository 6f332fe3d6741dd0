#!/usr/bin/env node
// Writes oclif.manifest.json after tsc (npm run build): what oclif shows without running a command
// (`svc --help`, a topic's help, a command's help, "did you mean") for the npm-installed svc, whose
// command index loads a command's module only when it runs (src/cli/lazy-command.ts). oclif makes
// the manifest itself here, from the index of classes (src/cli/generated/command-classes.ts), so its
// shape is oclif's own. The single executable reads no manifest: it loads the classes.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Config } from '@oclif/core';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const file = join(root, 'oclif.manifest.json');
const pjson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const { PACKAGE } = await import(join(root, 'dist', 'src', 'cli', 'generated', 'build.js'));

// A manifest left from an earlier build would be read instead of made.
rmSync(file, { force: true });
const config = await Config.load({
  root,
  pjson: { ...pjson, oclif: PACKAGE.oclif },
  userPlugins: false,
  devPlugins: false,
});
const manifest = config.getPluginsList().find((p) => p.root === root)?.manifest;
const ids = Object.keys(manifest?.commands ?? {});
if (ids.length === 0) {
  console.error('generate-manifest: oclif found no commands');
  process.exit(1);
}
writeFileSync(file, `${JSON.stringify(manifest, null, 2)}\n`);
