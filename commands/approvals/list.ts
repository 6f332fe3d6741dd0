import type { ApprovalView } from '../../src/approvals/service.js';
import { withAdmin } from '../../src/cli/admin.js';
import { SvcCommand } from '../../src/cli/base-command.js';
import { localFlags, tokenFlags } from '../../src/cli/flags.js';

export default class ApprovalsList extends SvcCommand {
  static override summary = 'List the approvals waiting for a person (read only).';
  static override description =
    'Through the server with a service token (SVC_TOKEN, scope approvals:read), or --local on the store. Only a person in the console decides an approval: no command approves or denies.';
  static override examples = [
    'SVC_TOKEN=ims_... <%= config.bin %> approvals list --json',
    '<%= config.bin %> approvals list --local',
  ];
  static override flags = { ...localFlags, ...tokenFlags('approvals:read') };

  async run(): Promise<{ data: ApprovalView[] }> {
    const { flags } = await this.parse(ApprovalsList);
    const data = await withAdmin(flags, flags.token, (admin) => admin.listApprovals());
    for (const a of data) {
      const what = a.freeze
        ? `freeze of ${a.freeze.all ? 'every agent' : `${a.freeze.agentIds.length} agents`}`
        : a.action?.summary;
      this.log(`${a.id}  expires ${a.expiresAt}  ${what ?? ''}`);
    }
    return { data };
  }
}
