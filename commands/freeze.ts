import { Flags } from '@oclif/core';
import { withAdmin } from '../src/cli/admin.js';
import { SvcCommand } from '../src/cli/base-command.js';
import { agents, localFlags, reasonFlag, reasonOf, tokenFlags } from '../src/cli/flags.js';
import type { FreezeAnswer } from '../src/killswitch/index.js';
import { selectorOf } from '../src/killswitch/selector.js';

type Frozen = FreezeAnswer & { hold?: 'owner' | 'token' };

export default class Freeze extends SvcCommand {
  static override summary = 'Kill switch from the terminal: stop one agent, a selection, or every agent.';
  static override description =
    'Through the server with a service token (SVC_TOKEN, scope agents:freeze): hold "token"; past the workspace\'s ceiling a selection waits for a person (exit 0, status pending). With --local on the store directly, also while the server runs: hold "owner", as Stop in the console, no ceiling. A selection (--selector or --all) needs --confirm-count equal to what it matches now, either way; --all also turns on "stop every agent". Only a person or `svc agents restart --local` lifts a freeze. Recorded in the ledger.';
  static override examples = [
    'SVC_TOKEN=ims_... <%= config.bin %> freeze --agent agt_... --reason "runaway spend"',
    'SVC_TOKEN=ims_... <%= config.bin %> freeze --selector tag=payments --reason "incident 42" --confirm-count 12 --json',
    '<%= config.bin %> freeze --all --confirm-count 40 --reason "incident 42" --local --json',
  ];
  static override flags = {
    agent: Flags.string({ description: 'the agent to stop (agt_...)', exactlyOne: ['agent', 'all', 'selector'] }),
    all: Flags.boolean({ description: 'every agent of the workspace, and "stop every agent" on' }),
    selector: Flags.string({
      description: 'key=value (tag=, agent=, blueprint=, actsFor=); repeatable, every one must hold',
      multiple: true,
    }),
    reason: reasonFlag,
    'confirm-count': Flags.integer({ description: 'for --all or --selector: how many agents it matches now', min: 1 }),
    ...localFlags,
    ...tokenFlags('agents:freeze'),
  };

  async run(): Promise<Frozen> {
    const { flags } = await this.parse(Freeze);
    const reason = reasonOf(flags.reason);
    const hold = flags.local ? 'owner' : 'token';
    const answer = await withAdmin(flags, flags.token, async (admin): Promise<FreezeAnswer> => {
      if (!flags.agent) return admin.freeze(selectorOf(flags), reason, flags['confirm-count']);
      return { frozen: 1, agentIds: [(await admin.stopAgent(flags.agent, reason)).id] };
    });
    if ('status' in answer) {
      this.log(
        `${agents(answer.count)} selected: past the ceiling, waiting for a person to approve ${answer.approvalId}.`,
      );
      return answer;
    }
    this.log(`Stopped ${agents(answer.frozen)} (hold ${hold}): ${answer.agentIds.join(', ')}`);
    return { ...answer, hold };
  }
}
