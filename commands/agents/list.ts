import { Flags } from '@oclif/core';
import type { AgentView } from '../../src/agents/index.js';
import { dataDirFlag, EXIT, SvcCommand, urlFlag } from '../../src/cli/base-command.js';
import { callServer } from '../../src/cli/http-client.js';
import { openLocal, pickWorkspace } from '../../src/cli/local.js';

type Listed = { data: AgentView[] };

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
    local: Flags.boolean({ description: 'read the store directly instead of calling the server' }),
    workspace: Flags.string({ description: 'with --local: workspace id, when the store has several' }),
    'data-dir': dataDirFlag,
    url: urlFlag,
    token: Flags.string({ description: 'service token with scope agents:read', env: 'SVC_TOKEN' }),
  };

  async run(): Promise<Listed> {
    const { flags } = await this.parse(AgentsList);
    let data: AgentView[];
    if (flags.local) {
      const app = await openLocal(flags['data-dir'], { readOnly: true });
      try {
        const wid = pickWorkspace(app, flags.workspace);
        data = app.services.agents
          .list(wid)
          .map((a) => app.services.agents.view(a))
          .filter((a) => (!flags.tag || a.tags.includes(flags.tag)) && (!flags.status || a.status === flags.status));
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
      const query = new URLSearchParams({
        ...(flags.tag ? { tag: flags.tag } : {}),
        ...(flags.status ? { status: flags.status } : {}),
      }).toString();
      data = (
        await callServer<Listed>(flags.url, 'GET', `/v1/admin/agents${query ? `?${query}` : ''}`, {
          bearer: flags.token,
        })
      ).data;
    }
    for (const a of data)
      this.log(
        `${a.id}  ${a.status.padEnd(7)}  ${a.name}${a.tags.length ? `  [${a.tags.join(', ')}]` : ''}${a.holds.length ? `  holds: ${a.holds.map((h) => h.hold).join(', ')}` : ''}`,
      );
    return { data };
  }
}
