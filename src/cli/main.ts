import { execute, type Interfaces } from '@oclif/core';
import { VERSION } from './version.js';

export { VERSION } from './version.js';

/**
 * Runs the command line: the one entry of both builds. `bin/run.js` passes the package folder
 * (oclif reads package.json there); the single executable has no package.json, so it passes the
 * fields oclif reads as `pjson`. Either way the commands come from the generated index that
 * package.json's oclif "commands" names (the explicit strategy): no directory is scanned.
 */
export async function run(options: { root: string; pjson?: Interfaces.PJSON }): Promise<void> {
  await execute({
    loadOptions: {
      root: options.root,
      version: VERSION,
      ...(options.pjson ? { pjson: options.pjson } : {}),
      // No plugins from outside the build: oclif would otherwise load any that a package.json in the
      // user's oclif data folder lists, and run their code inside svc.
      userPlugins: false,
      devPlugins: false,
    },
  });
}
