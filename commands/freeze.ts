import { Flags } from '@oclif/core';
import { dataDirFlag, EXIT, SvcCommand } from '../src/cli/base-command.js';
import { openLocal, pickWorkspace } from '../src/cli/local.js';

type Frozen = { frozen: number; agentIds: string[]; hold: 'owner' };

export default class Freeze extends SvcCommand {
  static override summary = 'Kill switch from the terminal: stop one agent or every agent.';
  static override description = 'With --local it writes the hold on the store directly, which works while the server runs: the server reads an agent\'s standing from the store on every request, so the very next request is refused. It writes the same hold as Stop in the console (hold "owner", by operator:cli), and only a person lifts it (restart in the console). Recorded in the ledger.';
  static override examples = [
    '<%= config.bin %> freeze --agent agt_... --reason "runaway spend" --local',
    '<%= config.bin %> freeze --all --reason "incident 42" --local --json   # also turns on "stop every agent"',
  ];
  static override flags = {
    agent: Flags.string({ description: 'the agent to stop (agt_...)', exactlyOne: ['agent', 'all'] }),
    all: Flags.boolean({ description: 'every agent of the workspace' }),
    reason: Flags.string({ description: 'why (kept with the hold and in the ledger)', required: true }),
    local: Flags.boolean({ description: 'write to the store directly (required for now: freezing through the server comes with service-token routes)' }),
    workspace: Flags.string({ description: 'workspace id, when the store has several' }),
    'data-dir': dataDirFlag,
  };

  async run(): Promise<Frozen> {
    const { flags } = await this.parse(Freeze);
    if (!flags.local) this.fail('freezing through the server is not available yet; pass --local to write the hold on the store', EXIT.usage, 'usage', 'Run it on the server\'s machine with --local and --data-dir.');
    if (flags.reason.trim() === '') this.fail('--reason must say why', EXIT.usage, 'reason_required');
    const app = await openLocal(flags['data-dir']);
    try {
      const wid = pickWorkspace(app, flags.workspace);
      const ids = flags.all ? app.services.agents.list(wid).map((a) => a.id) : [flags.agent!];
      // --all also turns on "stop every agent", so an agent created afterwards is stopped too.
      if (flags.all) await app.services.killSwitch.stopAll(wid, flags.reason.trim(), { actor: 'operator:cli' });
      for (const id of ids) await app.services.killSwitch.stop(wid, id, { hold: 'owner', reason: flags.reason.trim() }, { actor: 'operator:cli' });
      this.log(`Stopped ${ids.length} agent${ids.length === 1 ? '' : 's'}: ${ids.join(', ')}`);
      return { frozen: ids.length, agentIds: ids, hold: 'owner' };
    } finally {
      await app.close();
    }
  }
}
