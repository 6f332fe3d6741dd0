import { Flags } from '@oclif/core';
import type { AgentView } from '../../src/agents/index.js';
import { dataDirFlag, EXIT, SvcCommand } from '../../src/cli/base-command.js';
import { openLocal, pickWorkspace } from '../../src/cli/local.js';

type Created = AgentView & { mandateRules: number };

export default class AgentsCreate extends SvcCommand {
  static override summary = 'Register an agent on the store, with a mandate taken from templates.';
  static override description = 'The operator\'s shortcut (--local, on the store directly, also while the server runs). The mandate is the rules of the named templates, in order; without --template the agent has no mandate and every action it asks is denied. Mint its key with `svc keys create --scope agent --agent ID --local`.';
  static override examples = ['<%= config.bin %> agents create --name billing-bot --acts-for ops@acme.example --template tpl_... --local --json'];
  static override flags = {
    name: Flags.string({ description: 'the agent\'s name', required: true }),
    'acts-for': Flags.string({ description: 'email of the member the agent acts for' }),
    template: Flags.string({ description: 'a template (tpl_...) whose rules become the mandate; repeatable', multiple: true }),
    tag: Flags.string({ description: 'a tag; repeatable', multiple: true }),
    local: Flags.boolean({ description: 'write to the store directly (required: registering through the server takes a blueprint)', required: true }),
    workspace: Flags.string({ description: 'workspace id, when the store has several' }),
    'data-dir': dataDirFlag,
  };

  async run(): Promise<Created> {
    const { flags } = await this.parse(AgentsCreate);
    const app = await openLocal(flags['data-dir']);
    try {
      const wid = pickWorkspace(app, flags.workspace);
      let actsFor: string | null = null;
      if (flags['acts-for']) {
        actsFor = app.services.people.memberIdByEmail(wid, flags['acts-for']) ?? null;
        if (!actsFor) this.fail(`no member ${flags['acts-for']} in this workspace`, EXIT.usage, 'not_found', 'Name the email of a member of the workspace.');
      }
      // Templates first: a missing one stops everything before the agent exists.
      const rules = app.services.mandates.rulesOfTemplates(wid, flags.template ?? []);
      const agent = await app.services.agents.create({ workspaceId: wid, name: flags.name, actsFor, tags: flags.tag ?? [] });
      if (rules.length > 0) await app.services.mandates.put(wid, agent.id, { rules, confirmBroaden: true }, { actor: 'operator:cli' });
      const view = app.services.agents.view(agent);
      this.log(`Agent ${view.id} (${view.name}) with ${rules.length} mandate rule${rules.length === 1 ? '' : 's'}.`);
      return { ...view, mandateRules: rules.length };
    } finally {
      await app.close();
    }
  }
}
