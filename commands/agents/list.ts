import { Flags } from '@oclif/core';
import type { AgentView } from '../../src/agents/index.js';
import { withAdmin } from '../../src/cli/admin.js';
import { SvcCommand } from '../../src/cli/base-command.js';
import { localFlags, tokenFlags } from '../../src/cli/flags.js';

export default class AgentsList extends SvcCommand {
  static override summary = 'List the agents of a workspace with their standing.';
  static override description =
    'Through the server with a service token (SVC_TOKEN, scope agents:read), or --local on the store directly.';
  static override examples = [
    'SVC_TOKEN=ims_... <%= config.bin %> agents list --status stopped --json',
    '<%= config.bin %> agents list --local --data-dir /var/lib/svc',
  ];
  static override flags = {
    tag: Flags.string({ description: 'only agents with this tag' }),
    status: Flags.string({ description: 'only running or stopped agents', options: ['running', 'stopped'] }),
    ...localFlags,
    ...tokenFlags('agents:read'),
  };

  async run(): Promise<{ data: AgentView[] }> {
    const { flags } = await this.parse(AgentsList);
    // Only reads: --local works on a read-only copy of the store.
    const data = await withAdmin(
      flags,
      flags.token,
      (admin) => admin.listAgents({ tag: flags.tag, status: flags.status }),
      'token',
      { readOnly: true },
    );
    for (const a of data) {
      const tags = a.tags.length ? `  [${a.tags.join(', ')}]` : '';
      const holds = a.holds.length ? `  holds: ${a.holds.map((h) => h.hold).join(', ')}` : '';
      this.log(`${a.id}  ${a.status.padEnd(7)}  ${a.name}${tags}${holds}`);
    }
    return { data };
  }
}
