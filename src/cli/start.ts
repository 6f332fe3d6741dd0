import type { Interfaces } from '@oclif/core';
import { VERSION_LINE } from './version.js';

/**
 * The entry of both builds (bin/run.js; src/cli/binary.ts for the single executable).
 * `svc --version` and the root `svc --help` answer here, before oclif or any command is loaded
 * (root-help.ts); everything else goes to
 * oclif (./main.ts), which loads only the command run. The single executable passes `pjson`
 * (it has no package.json) and turns off oclif's TypeScript support (it holds no sources).
 */
export async function start(options: {
  root: string;
  argv: readonly string[];
  pjson?: Interfaces.PJSON;
}): Promise<void> {
  if (options.argv.length === 1 && options.argv[0] === '--version') {
    process.stdout.write(`${VERSION_LINE}\n`);
    return;
  }
  // `svc --help` (or `svc` alone): the command list from the build's manifest, without oclif.
  if (!options.pjson && (options.argv.length === 0 || (options.argv.length === 1 && options.argv[0] === '--help'))) {
    const help = (await import('./root-help.js')).rootHelp(options.root, process.stdout.columns ?? 80);
    if (help !== null) {
      process.stdout.write(help);
      return;
    }
  }
  if (options.pjson) (await import('@oclif/core')).settings.enableAutoTranspile = false;
  const { run } = await import('./main.js');
  await run({ root: options.root, ...(options.pjson ? { pjson: options.pjson } : {}) });
}
