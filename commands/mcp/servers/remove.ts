import { Args } from '@oclif/core';
import { SvcCommand } from '../../../src/cli/base-command.js';
import { tokenFlags } from '../../../src/cli/flags.js';
import { mcpClient } from '../../../src/cli/mcp.js';

export default class McpServersRemove extends SvcCommand {
  static override summary = 'Remove an upstream MCP server: its tools leave /mcp at once.';
  static override description =
    'Through the server with a service token (SVC_TOKEN, scope mcp:write): the same ledger record as the console (mcp.server_removed); its pins go with it.';
  static override examples = ['SVC_TOKEN=ims_... <%= config.bin %> mcp servers remove files'];
  static override args = { name: Args.string({ description: 'the server', required: true }) };
  static override flags = { ...tokenFlags('mcp:write') };

  async run(): Promise<{ name: string; removed: true }> {
    const { args, flags } = await this.parse(McpServersRemove);
    await mcpClient(flags).mcp.remove(args.name);
    this.log(`Removed ${args.name}.`);
    return { name: args.name, removed: true };
  }
}
