import { Args, Flags } from '@oclif/core';
import { SvcCommand } from '../../../src/cli/base-command.js';
import { tokenFlags } from '../../../src/cli/flags.js';
import { mcpClient, addedText, addRequest, type McpServerAdded } from '../../../src/cli/mcp.js';

export default class McpServersAdd extends SvcCommand {
  static override summary = 'Add an upstream MCP server behind /mcp; its tools as they are now are pinned.';
  static override description =
    "Through the server with a service token (SVC_TOKEN, scope mcp:write), as an owner or admin adds one in the console: the same ledger record (mcp.server_added). Name the server and its URL (--url is the svc server, as for every command), or read them from an MCP Registry server.json (--from FILE: its streamable-http remote; a package run over stdio is a local server, which the operator declares in the configuration file). The upstream's bearer token is read from the environment variable that --secret-env names, never from the command line. A server that cannot be listed now is added with its tools withheld until each is approved.";
  static override examples = [
    'SVC_TOKEN=ims_... <%= config.bin %> mcp servers add files https://files.example/mcp --secret-env FILES_TOKEN --allow read_file,list_dir',
    'SVC_TOKEN=ims_... <%= config.bin %> mcp servers add --from server.json --secret-env FILES_TOKEN --json',
  ];
  static override args = {
    name: Args.string({ description: 'the name agents see its tools under (<name>__<tool>); default from --from' }),
    upstream: Args.string({ description: "the upstream's Streamable HTTP URL (https; http on loopback only)" }),
  };
  static override flags = {
    from: Flags.string({ description: 'an MCP Registry server.json file to take the name and URL from' }),
    'secret-env': Flags.string({ description: "environment variable holding the upstream's bearer token" }),
    allow: Flags.string({ description: 'only these tools, separated by commas (default: all)' }),
    ...tokenFlags('mcp:write'),
  };

  async run(): Promise<McpServerAdded> {
    const { args, flags } = await this.parse(McpServersAdd);
    const client = mcpClient(flags);
    const input = await addRequest(args.name, { ...flags, url: args.upstream });
    const added = await client.mcp.add(input);
    for (const line of addedText(added)) this.log(line);
    return added;
  }
}
