import type { Command, Config } from '@oclif/core';

/**
 * A command of the generated index (src/cli/generated/commands.ts) that loads its module only
 * when it runs: oclif finds it by id and calls its `run`, which imports the command's class and
 * runs that, so `svc freeze` never loads what `svc serve` needs. Help and the command list read
 * oclif.manifest.json instead of the classes (scripts/generate-manifest.mjs).
 */
export interface LazyCommand {
  id?: string;
  plugin?: Command.Class['plugin'];
  run(argv: string[], config: Config): Promise<unknown>;
}

export function lazyCommand(load: () => Promise<{ default: Command.Class }>): LazyCommand {
  const stub: LazyCommand = {
    async run(argv, config) {
      const command = (await load()).default;
      // What oclif set on the stub when it found it, as it would have set it on the class.
      if (stub.id !== undefined) command.id = stub.id;
      if (stub.plugin !== undefined) command.plugin = stub.plugin;
      return command.run(argv, config);
    },
  };
  return stub;
}
