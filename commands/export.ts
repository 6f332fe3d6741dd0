import { SvcCommand } from '../src/cli/base-command.js';
import { tokenFlags } from '../src/cli/flags.js';
import { documentYaml, setupClient } from '../src/cli/setup.js';
import type { WorkspaceDocument } from '../src/setup/document.js';

export default class Export extends SvcCommand {
  static override summary = "Write the workspace's file (what svc apply takes) to standard output.";
  static override description =
    'Through the server with a service token (SVC_TOKEN, scope setup:read). Templates, blueprints, agents, budgets, MCP servers and integrations, named by name and e-mail address; every secret as { fromEnv: NAME }, never its value. svc apply of the file it writes, with those variables set, changes nothing. --json prints { document }.';
  static override examples = [
    'SVC_TOKEN=ims_... <%= config.bin %> export > workspace.yaml',
    'SVC_TOKEN=ims_... <%= config.bin %> export --json',
  ];
  static override flags = { ...tokenFlags('setup:read') };

  async run(): Promise<{ document: WorkspaceDocument }> {
    const { flags } = await this.parse(Export);
    const client = setupClient(flags);
    const { document } = await client.export();
    if (!this.jsonEnabled()) this.log(documentYaml(document, client.url).trimEnd());
    return { document };
  }
}
