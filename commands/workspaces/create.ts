import { Args } from '@oclif/core';
import { SvcCommand } from '../../src/cli/base-command.js';
import { resolveRemote } from '../../src/cli/remote.js';
import { credentialsOf, personFlags, workspacesClient, type WorkspaceView } from '../../src/cli/workspaces.js';

export default class WorkspacesCreate extends SvcCommand {
  static override summary = 'Create another workspace, of which you are the owner.';
  static override description =
    'Through the server, signed in as yourself (SVC_EMAIL and SVC_PASSWORD, or --password-stdin): only an owner of a workspace may create another (POST /api/workspaces). The new workspace shares nothing with yours but you: its members, agents, keys, tokens, settings and ledger are its own. Recorded in its ledger and in the ledger of each workspace you own (workspace.created).';
  static override examples = [
    'SVC_EMAIL=owner@acme.example SVC_PASSWORD=... <%= config.bin %> workspaces create Staging',
    '<%= config.bin %> workspaces create Staging --email owner@acme.example --password-stdin --json < password.txt',
  ];
  static override args = { name: Args.string({ description: 'the new workspace name', required: true }) };
  static override flags = { ...personFlags };

  async run(): Promise<WorkspaceView> {
    const { args, flags } = await this.parse(WorkspacesCreate);
    const created = await workspacesClient(
      resolveRemote(flags, undefined, { useSignIn: false }).url,
      await credentialsOf(flags),
    ).create(args.name);
    this.log(`Workspace "${created.name}" ${created.id}: you are its owner.`);
    return created;
  }
}
