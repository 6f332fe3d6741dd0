import { Flags } from '@oclif/core';
import { dataDirFlag, EXIT, SvcCommand, urlFlag } from '../src/cli/base-command.js';
import { callServer } from '../src/cli/http-client.js';
import { openLocal, pickWorkspace } from '../src/cli/local.js';

type Frozen =
  | { frozen: number; agentIds: string[]; hold: 'owner' | 'token' }
  | { status: 'pending'; approvalId: string; count: number };

/** `key=value` selector flags: agentIds, tags (repeatable), blueprint, actsFor. */
function selectorOf(pairs: readonly string[]): Record<string, unknown> {
  const selector: Record<string, unknown> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    const key = at > 0 ? pair.slice(0, at) : '';
    const value = pair.slice(at + 1);
    if (key === 'tag' || key === 'tags') selector.tags = [...((selector.tags as string[]) ?? []), value];
    else if (key === 'agent' || key === 'agentIds')
      selector.agentIds = [...((selector.agentIds as string[]) ?? []), value];
    else if (key === 'blueprint' || key === 'actsFor') selector[key] = value;
    else throw new Error(`--selector ${pair}: use tag=, agent=, blueprint= or actsFor=`);
  }
  return selector;
}

export default class Freeze extends SvcCommand {
  static override summary = 'Kill switch from the terminal: stop one agent, a selection, or every agent.';
  static override description =
    'Through the server with a service token (SVC_TOKEN, scope agents:freeze): one agent, or a selection confirmed by --confirm-count; past the workspace\'s ceiling the freeze waits for a person (exit 0, status pending). With --local it writes the hold on the store directly, which works while the server runs (the server reads standing on every request): the same hold as Stop in the console (hold "owner", by operator:cli); --all also turns on "stop every agent". Only a person lifts a freeze (restart in the console). Recorded in the ledger.';
  static override examples = [
    'SVC_TOKEN=ims_... <%= config.bin %> freeze --agent agt_... --reason "runaway spend"',
    'SVC_TOKEN=ims_... <%= config.bin %> freeze --selector tag=payments --reason "incident 42" --confirm-count 12 --json',
    '<%= config.bin %> freeze --all --reason "incident 42" --local --json   # also turns on "stop every agent"',
  ];
  static override flags = {
    agent: Flags.string({ description: 'the agent to stop (agt_...)', exactlyOne: ['agent', 'all', 'selector'] }),
    all: Flags.boolean({ description: 'every agent of the workspace' }),
    selector: Flags.string({
      description: 'through the server: key=value (tag=, agent=, blueprint=, actsFor=); repeatable',
      multiple: true,
    }),
    reason: Flags.string({ description: 'why (kept with the hold and in the ledger)', required: true }),
    'confirm-count': Flags.integer({
      description: 'through the server, for --all or --selector: the number of agents you expect to freeze',
      min: 1,
    }),
    local: Flags.boolean({ description: 'write to the store directly instead of calling the server' }),
    workspace: Flags.string({ description: 'with --local: workspace id, when the store has several' }),
    'data-dir': dataDirFlag,
    url: urlFlag,
    token: Flags.string({ description: 'service token with scope agents:freeze', env: 'SVC_TOKEN' }),
  };

  async run(): Promise<Frozen> {
    const { flags } = await this.parse(Freeze);
    const reason = flags.reason.trim();
    if (reason === '') this.fail('--reason must say why', EXIT.usage, 'reason_required');
    if (!flags.local) {
      if (!flags.token)
        this.fail(
          'no service token: set SVC_TOKEN (or --token), or use --local on the store',
          EXIT.usage,
          'unauthenticated',
        );
      if (flags.agent) {
        const agent = await callServer<{ id: string }>(
          flags.url,
          'POST',
          `/v1/admin/agents/${encodeURIComponent(flags.agent)}/freeze`,
          { bearer: flags.token, body: { reason } },
        );
        this.log(`Stopped ${agent.id} (hold token).`);
        return { frozen: 1, agentIds: [agent.id], hold: 'token' };
      }
      let selector: Record<string, unknown>;
      try {
        selector = flags.all ? { all: true } : selectorOf(flags.selector ?? []);
      } catch (err) {
        this.fail((err as Error).message, EXIT.usage, 'invalid_selector');
      }
      const answer = await this.progress('Freezing the selection', () =>
        callServer<{ frozen: number; agentIds: string[] } | { status: 'pending'; approvalId: string; count: number }>(
          flags.url,
          'POST',
          '/v1/admin/freezes',
          {
            bearer: flags.token!,
            body: { selector, reason, ...(flags['confirm-count'] ? { confirmCount: flags['confirm-count'] } : {}) },
          },
        ),
      );
      if ('status' in answer) {
        this.log(
          `${answer.count} agents selected: past the workspace's ceiling, the freeze waits for a person to approve ${answer.approvalId} in the console.`,
        );
        return answer;
      }
      this.log(`Stopped ${answer.frozen} agent${answer.frozen === 1 ? '' : 's'}: ${answer.agentIds.join(', ')}`);
      return { ...answer, hold: 'token' };
    }
    if (flags.selector)
      this.fail('--selector works through the server; with --local use --agent or --all', EXIT.usage, 'usage');
    const app = await openLocal(flags['data-dir']);
    try {
      const wid = pickWorkspace(app, flags.workspace);
      const ids = flags.all ? app.services.agents.list(wid).map((a) => a.id) : [flags.agent!];
      // --all also turns on "stop every agent", so an agent created afterwards is stopped too.
      if (flags.all) await app.services.killSwitch.stopAll(wid, reason, { actor: 'operator:cli' });
      await this.progress(`Stopping ${ids.length} agent${ids.length === 1 ? '' : 's'}`, async (step) => {
        for (const [i, id] of ids.entries()) {
          await app.services.killSwitch.stop(wid, id, { hold: 'owner', reason }, { actor: 'operator:cli' });
          step(`${i + 1}/${ids.length}`);
        }
      });
      this.log(`Stopped ${ids.length} agent${ids.length === 1 ? '' : 's'}: ${ids.join(', ')}`);
      return { frozen: ids.length, agentIds: ids, hold: 'owner' };
    } finally {
      await app.close();
    }
  }
}
