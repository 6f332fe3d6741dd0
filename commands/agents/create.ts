import { Flags } from '@oclif/core';
import { withAdmin } from '../../src/cli/admin.js';
import { EXIT, SvcCommand } from '../../src/cli/base-command.js';
import type { AgentWithRules } from '../../src/cli/client.js';
import { localFlags, tokenFlags } from '../../src/cli/flags.js';

export default class AgentsCreate extends SvcCommand {
  static override summary = 'Register an agent, with a mandate taken from templates only.';
  static override description =
    "Through the server with a service token (SVC_TOKEN, scope agents:write): from a blueprint (--blueprint), whose templates and tags the agent gets, plus any --template named. Or the operator's shortcut --local, on the store directly (also while the server runs), from templates and an optional blueprint. The agent and its mandate are written together: an unknown template or blueprint leaves nothing behind. Without any template the agent has no mandate and every action it asks is denied. Mint its key with `svc keys create --scope agent --agent ID --local`.";
  static override examples = [
    'SVC_TOKEN=ims_... <%= config.bin %> agents create --blueprint bp_... --name billing-7 --acts-for ops@acme.example --json',
    '<%= config.bin %> agents create --name billing-bot --acts-for ops@acme.example --template tpl_... --local --json',
  ];
  static override flags = {
    name: Flags.string({ description: "the agent's name", required: true }),
    blueprint: Flags.string({
      description: 'a blueprint (bp_...): its tags and the rules of its templates (required through the server)',
    }),
    'acts-for': Flags.string({ description: 'email of the member the agent acts for' }),
    template: Flags.string({
      description: 'a template (tpl_...) whose rules join the mandate; repeatable',
      multiple: true,
    }),
    tag: Flags.string({ description: 'a tag; repeatable', multiple: true }),
    ...localFlags,
    ...tokenFlags('agents:write'),
  };

  async run(): Promise<AgentWithRules> {
    const { flags } = await this.parse(AgentsCreate);
    if (!flags.local && flags.token && !flags.blueprint)
      this.fail(
        'through the server an agent is registered from a blueprint: pass --blueprint bp_...',
        EXIT.usage,
        'usage',
      );
    const created = await withAdmin(flags, flags.token, (admin) =>
      admin.createAgent({
        name: flags.name,
        ...(flags.blueprint ? { blueprint: flags.blueprint } : {}),
        ...(flags['acts-for'] ? { actsFor: flags['acts-for'] } : {}),
        ...(flags.tag ? { tags: flags.tag } : {}),
        ...(flags.template ? { templates: flags.template } : {}),
      }),
    );
    this.log(`Agent ${created.id} (${created.name}) with ${created.mandateRules} mandate rule(s).`);
    return created;
  }
}
