import { withAdmin } from '../../src/cli/admin.js';
import { SvcCommand } from '../../src/cli/base-command.js';
import { adminKeyFlags, localFlags } from '../../src/cli/flags.js';
import type { KeyView } from '../../src/keys/index.js';

export default class KeysList extends SvcCommand {
  static override summary = 'List the workspace keys (never their values).';
  static override description =
    'Through the server with an admin workspace key (SVC_ADMIN_KEY), or --local on the store directly.';
  static override examples = [
    'SVC_ADMIN_KEY=ask_... <%= config.bin %> keys list --json',
    '<%= config.bin %> keys list --local',
  ];
  static override flags = { ...localFlags, ...adminKeyFlags };

  async run(): Promise<{ data: KeyView[] }> {
    const { flags } = await this.parse(KeysList);
    const data = await withAdmin(flags, flags['admin-key'], (admin) => admin.listKeys(), 'admin-key');
    for (const k of data)
      this.log(
        `${k.id}  ${k.scope.padEnd(9)}  ${k.name ?? '-'}${k.agentId ? `  agent ${k.agentId}` : ''}${k.expiresAt ? `  expires ${k.expiresAt}` : ''}${k.revokedAt ? `  revoked ${k.revokedAt}` : ''}`,
      );
    return { data };
  }
}
