import { Args, Flags } from '@oclif/core';
import type { PinView } from '../../../src/mcp/pins.js';
import { SvcCommand } from '../../../src/cli/base-command.js';
import { tokenFlags } from '../../../src/cli/flags.js';
import { approve, callsPerMinuteOf, mcpClient } from '../../../src/cli/mcp.js';

export default class McpToolsApprove extends SvcCommand {
  static override summary =
    'Approve what an upstream tool says now (its description and input schema): it is served again.';
  static override description =
    "Through the server with a service token (SVC_TOKEN, scope mcp:write), as an owner or admin approves in the console: the same ledger record (mcp.tool_approved). With --hash (from `svc mcp tools list`), exactly the state reviewed is approved, and a tool that changed again since is refused; without it, the state listed now is approved (this reads the tools first: scope mcp:read too). --calls-per-minute sets the tool's per-agent limit with the approval, or alone on a tool already approved (none lifts it). A tool already approved, with no limit given, is left as it is.";
  static override examples = [
    'SVC_TOKEN=ims_... <%= config.bin %> mcp tools approve files read_file --hash 3f2a...',
    'SVC_TOKEN=ims_... <%= config.bin %> mcp tools approve files read_file --json',
  ];
  static override args = {
    server: Args.string({ description: 'the server', required: true }),
    tool: Args.string({ description: 'the tool, as the upstream names it', required: true }),
  };
  static override flags = {
    hash: Flags.string({ description: 'the hash of the state to approve (64 hex characters), from tools list' }),
    'calls-per-minute': Flags.string({
      description: "the tool's own limit of calls per minute per agent (1 to 1000000, or none), set with the approval",
    }),
    ...tokenFlags('mcp:write'),
  };

  async run(): Promise<{ approved: boolean; pin: PinView }> {
    const { args, flags } = await this.parse(McpToolsApprove);
    const result = await approve(mcpClient(flags), args, {
      hash: flags.hash,
      callsPerMinute: callsPerMinuteOf(flags['calls-per-minute']),
    });
    const hash = result.pin.approved?.hash ?? '';
    this.log(
      result.approved
        ? `Approved ${args.server} ${args.tool} (${hash}): it is served again.`
        : `${args.server} ${args.tool} is already approved (${hash}).`,
    );
    return result;
  }
}
