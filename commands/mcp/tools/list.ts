import { Args } from '@oclif/core';
import { SvcCommand } from '../../../src/cli/base-command.js';
import { tokenFlags } from '../../../src/cli/flags.js';
import { mcpClient, toolLines, toolsOf, type ServerTool } from '../../../src/cli/mcp.js';

export default class McpToolsList extends SvcCommand {
  static override summary = 'List upstream tools with their pin state: approved, changed or new (withheld).';
  static override description =
    "Through the server with a service token (SVC_TOKEN, scope mcp:read), of one server or of all. Each upstream is listed afresh first, so a change shows before an agent meets it. Each line: server, tool, state, and the hash that `svc mcp tools approve --hash` takes (a pending tool's new state; an approved one's approved state). --json has each tool's approved and changed description and input schema, to review before approving.";
  static override examples = [
    'SVC_TOKEN=ims_... <%= config.bin %> mcp tools list',
    'SVC_TOKEN=ims_... <%= config.bin %> mcp tools list files --json',
  ];
  static override args = { server: Args.string({ description: 'only this server' }) };
  static override flags = { ...tokenFlags('mcp:read') };

  async run(): Promise<{ data: ServerTool[]; unreachable: string[] }> {
    const { args, flags } = await this.parse(McpToolsList);
    const result = await toolsOf(mcpClient(flags), args.server);
    for (const line of toolLines(result)) this.log(line);
    return result;
  }
}
