import { Flags } from '@oclif/core';
import type { AgentView } from '../../src/agents/index.js';
import { dataDirFlag, EXIT, SvcCommand, urlFlag } from '../../src/cli/base-command.js';
import { callServer } from '../../src/cli/http-client.js';
import { openLocal, pickWorkspace } from '../../src/cli/local.js';

type Created = AgentView & { mandateRules: number };

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
    local: Flags.boolean({ description: 'write to the store directly instead of calling the server' }),
    workspace: Flags.string({ description: 'with --local: workspace id, when the store has several' }),
    'data-dir': dataDirFlag,
    url: urlFlag,
    token: Flags.string({ description: 'service token with scope agents:write', env: 'SVC_TOKEN' }),
  };

  async run(): Promise<Created> {
    const { flags } = await this.parse(AgentsCreate);
    const request = {
      name: flags.name,
      ...(flags.blueprint ? { blueprint: flags.blueprint } : {}),
      ...(flags['acts-for'] ? { actsFor: flags['acts-for'] } : {}),
      ...(flags.tag ? { tags: flags.tag } : {}),
      ...(flags.template ? { templates: flags.template } : {}),
    };
    let created: Created;
    if (flags.local) {
      const app = await openLocal(flags['data-dir']);
      try {
        const wid = pickWorkspace(app, flags.workspace);
        const agent = await app.services.blueprints.register(
          { workspaceId: wid, ...request },
          { actor: 'operator:cli' },
        );
        created = { ...app.services.agents.view(agent), mandateRules: agent.mandateRules };
      } finally {
        await app.close();
      }
    } else {
      if (!flags.token)
        this.fail(
          'no service token: set SVC_TOKEN (or --token), or use --local on the store',
          EXIT.usage,
          'unauthenticated',
        );
      if (!flags.blueprint)
        this.fail(
          'through the server an agent is registered from a blueprint: pass --blueprint bp_...',
          EXIT.usage,
          'usage',
        );
      created = await callServer<Created>(flags.url, 'POST', '/v1/admin/agents', {
        bearer: flags.token,
        body: request,
      });
    }
    this.log(
      `Agent ${created.id} (${created.name}) with ${created.mandateRules} mandate rule${created.mandateRules === 1 ? '' : 's'}.`,
    );
    return created;
  }
}
