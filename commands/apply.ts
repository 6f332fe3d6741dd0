import { Flags } from '@oclif/core';
import { SvcCommand } from '../src/cli/base-command.js';
import { tokenFlags } from '../src/cli/flags.js';
import { readWorkspaceFile, resultText, secretsOf, setupClient, withLines } from '../src/cli/setup.js';
import type { SetupResult } from '../src/setup/service.js';

export default class Apply extends SvcCommand {
  static override summary =
    'Make the workspace match a workspace file (templates, blueprints, agents, budgets, MCP servers, integrations).';
  static override description =
    'Through the server with a service token (SVC_TOKEN, scope setup:write; setup:read is enough for --dry-run). Creates what the file names and the workspace lacks, updates what differs (naming the fields), and leaves the rest: applying the same file twice changes nothing. Secrets are never in the file: a secret field is { fromEnv: NAME }, read here from the environment variable NAME. What the workspace has and the file does not is left alone and listed; --prune removes the agents and MCP servers that an earlier apply created and the file no longer names. See docs/setup-as-code.md.';
  static override examples = [
    'SVC_TOKEN=ims_... <%= config.bin %> apply -f workspace.yaml --dry-run',
    'SVC_TOKEN=ims_... STRIPE_WEBHOOK_SECRET=whsec_... <%= config.bin %> apply -f workspace.yaml --json',
  ];
  static override flags = {
    file: Flags.string({
      char: 'f',
      description: 'the workspace file (YAML or JSON; - for standard input)',
      required: true,
    }),
    'dry-run': Flags.boolean({
      description: 'print what would change (create, update with the fields, unchanged) and write nothing',
    }),
    prune: Flags.boolean({
      description: 'also remove the agents and MCP servers an earlier apply created that the file no longer names',
    }),
    ...tokenFlags('setup:write'),
  };

  async run(): Promise<SetupResult> {
    const { flags } = await this.parse(Apply);
    const { document, source, lineOf } = await readWorkspaceFile(flags.file);
    const secrets = secretsOf(document);
    const result = await setupClient(flags)
      .apply({ document, secrets, dryRun: flags['dry-run'], prune: flags.prune })
      .catch((err: unknown) => {
        throw withLines(err, source, lineOf);
      });
    for (const line of resultText(result, source)) this.log(line);
    return result;
  }
}
