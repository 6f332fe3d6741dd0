import { Args } from '@oclif/core';
import type { AgentView } from '../../src/agents/index.js';
import { withAdmin } from '../../src/cli/admin.js';
import { SvcCommand } from '../../src/cli/base-command.js';
import { localFlags, reasonFlag, reasonOf, tokenFlags } from '../../src/cli/flags.js';

export default class AgentsStop extends SvcCommand {
  static override summary = 'Stop one agent (the kill switch for one agent).';
  static override description =
    'Through the server with a service token (SVC_TOKEN, scope agents:freeze): hold "token". With --local on the store, also while the server runs: hold "owner", the same hold and ledger record as Stop in the console. The very next request of the agent is refused. Lift it with `svc agents restart --local` or in the console.';
  static override examples = [
    'SVC_TOKEN=ims_... <%= config.bin %> agents stop agt_... --reason "runaway spend"',
    '<%= config.bin %> agents stop agt_... --reason "incident 42" --local --json',
  ];
  static override args = { agent: Args.string({ description: 'the agent (agt_...)', required: true }) };
  static override flags = { reason: reasonFlag, ...localFlags, ...tokenFlags('agents:freeze') };

  async run(): Promise<AgentView> {
    const { args, flags } = await this.parse(AgentsStop);
    const reason = reasonOf(flags.reason);
    const agent = await withAdmin(flags, flags.token, (admin) => admin.stopAgent(args.agent, reason));
    this.log(`Stopped ${agent.id} (${agent.name}); holds: ${agent.holds.map((h) => h.hold).join(', ')}`);
    return agent;
  }
}
