import { Args } from '@oclif/core';
import { SvcCommand } from '../../../src/cli/base-command.js';
import { tokenFlags } from '../../../src/cli/flags.js';
import { mcpClient, testText, type McpServerTest } from '../../../src/cli/mcp.js';

export default class McpServersTest extends SvcCommand {
  static override summary =
    'Test the connection to an upstream MCP server: exit 1, with the cause, when it cannot be used.';
  static override description =
    "Through the server with a service token (SVC_TOKEN, scope mcp:read): svc lists the upstream's tools now, as an agent's call would reach it, and says how many wait for approval; a change it sees is recorded as an agent meeting it would record it.";
  static override examples = ['SVC_TOKEN=ims_... <%= config.bin %> mcp servers test files --json'];
  static override args = { name: Args.string({ description: 'the server', required: true }) };
  static override flags = { ...tokenFlags('mcp:read') };

  async run(): Promise<McpServerTest> {
    const { args, flags } = await this.parse(McpServersTest);
    const result = await mcpClient(flags).mcp.test(args.name);
    this.log(testText(result));
    if (!result.reachable) this.checkedFalse();
    return result;
  }
}
