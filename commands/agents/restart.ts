import { Args } from '@oclif/core';
import type { AgentView } from '../../src/agents/index.js';
import { withAdmin } from '../../src/cli/admin.js';
import { SvcCommand } from '../../src/cli/base-command.js';
import { localFlags, localOnly, tokenFlags } from '../../src/cli/flags.js';

export default class AgentsRestart extends SvcCommand {
  static override summary = 'Restart a stopped agent: lifts every hold on it (--local only).';
  static override description =
    'Lifting a hold is a person\'s act (no service token lifts a freeze), so this runs only with --local on the store, as the operator (the root of trust), also while the server runs. It writes the same ledger record as Restart in the console (agent.restarted, naming the holds lifted). "Stop every agent" stays on until `svc stop-all off --local`.';
  static override examples = ['<%= config.bin %> agents restart agt_... --local --data-dir /var/lib/svc'];
  static override args = { agent: Args.string({ description: 'the agent (agt_...)', required: true }) };
  static override flags = { ...localFlags, ...tokenFlags('none: no token lifts a freeze, use --local') };

  async run(): Promise<AgentView> {
    const { args, flags } = await this.parse(AgentsRestart);
    if (!flags.local)
      localOnly(
        'svc agents restart',
        'no service token lifts a freeze: only a person in the console or the operator on the store does',
      );
    const agent = await withAdmin(flags, undefined, (admin) => admin.restartAgent(args.agent));
    this.log(`Restarted ${agent.id} (${agent.name}): ${agent.status}`);
    return agent;
  }
}
