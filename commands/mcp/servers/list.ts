import { SvcCommand } from '../../../src/cli/base-command.js';
import { tokenFlags } from '../../../src/cli/flags.js';
import { mcpClient, serverLine, type McpServerView } from '../../../src/cli/mcp.js';

export default class McpServersList extends SvcCommand {
  static override summary = "List the workspace's upstream MCP servers.";
  static override description =
    'Through the server with a service token (SVC_TOKEN, scope mcp:read). A secret is never shown, only whether there is one.';
  static override examples = ['SVC_TOKEN=ims_... <%= config.bin %> mcp servers list --json'];
  static override flags = { ...tokenFlags('mcp:read') };

  async run(): Promise<{ data: McpServerView[] }> {
    const { flags } = await this.parse(McpServersList);
    const data = await mcpClient(flags).mcp.servers();
    for (const s of data) this.log(serverLine(s));
    return { data };
  }
}
