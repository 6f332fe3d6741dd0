import { SvcCommand } from '../../src/cli/base-command.js';
import { resolveRemote } from '../../src/cli/remote.js';
import { printable } from '../../src/cli/printable.js';
import { credentialsOf, personFlags, workspacesClient, type WorkspaceView } from '../../src/cli/workspaces.js';

export default class WorkspacesList extends SvcCommand {
  static override summary = 'List the workspaces you belong to, with your role in each.';
  static override description =
    'Through the server, signed in as yourself (SVC_EMAIL and SVC_PASSWORD, or --password-stdin).';
  static override examples = ['SVC_EMAIL=owner@acme.example SVC_PASSWORD=... <%= config.bin %> workspaces list --json'];
  static override flags = { ...personFlags };

  async run(): Promise<{ data: WorkspaceView[] }> {
    const { flags } = await this.parse(WorkspacesList);
    const data = await workspacesClient(
      resolveRemote(flags, undefined, { useSignIn: false }).url,
      await credentialsOf(flags),
    ).list();
    for (const w of data) this.log(`${w.id}  ${w.role.padEnd(8)} ${printable(w.name)}`);
    return { data };
  }
}
