import { Args, Flags } from '@oclif/core';
import { withAdmin } from '../src/cli/admin.js';
import { EXIT, SvcCommand } from '../src/cli/base-command.js';
import { agents, localFlags, reasonOf, tokenFlags } from '../src/cli/flags.js';
import type { PendingFreeze, StopAllState } from '../src/killswitch/index.js';

export default class StopAll extends SvcCommand {
  static override summary = '"Stop every agent": turn it on, off, or show it.';
  static override description =
    "on: every agent of the workspace is stopped, those registered later too, until it is turned off. Through the server with a service token (SVC_TOKEN, scope agents:freeze; past the workspace's ceiling it waits for a person, status pending), or --local. off: --local only (no token lifts a freeze); holds on single agents stay. status: scope agents:read, or --local. The same ledger records as the console (workspace.stop_all, workspace.stop_all_lifted).";
  static override examples = [
    'SVC_TOKEN=ims_... <%= config.bin %> stop-all on --reason "incident 42"',
    '<%= config.bin %> stop-all off --local',
    'SVC_TOKEN=ims_... <%= config.bin %> stop-all status --json',
  ];
  static override args = {
    action: Args.string({ description: 'on, off or status', required: true, options: ['on', 'off', 'status'] }),
  };
  static override flags = {
    reason: Flags.string({ description: 'with on: why (kept in the ledger)' }),
    ...localFlags,
    ...tokenFlags('agents:freeze (on) or agents:read (status)'),
  };

  async run(): Promise<StopAllState | PendingFreeze> {
    const { args, flags } = await this.parse(StopAll);
    if (args.action === 'on' && flags.reason === undefined)
      this.fail(
        'on needs --reason',
        EXIT.usage,
        'reason_required',
        'Pass --reason with a few words on why; it is kept in the ledger.',
      );
    const state = await withAdmin(flags, flags.token, (admin) =>
      args.action === 'on'
        ? admin.stopAllOn(reasonOf(flags.reason!))
        : args.action === 'off'
          ? admin.stopAllOff()
          : admin.stopAllStatus(),
    );
    if ('status' in state)
      this.log(`${agents(state.count)} live: past the ceiling, waiting for a person to approve ${state.approvalId}.`);
    else if (state.stopped) this.log(`Every agent is stopped: "${state.reason}", by ${state.by} at ${state.at}.`);
    else this.log('"Stop every agent" is off.');
    return state;
  }
}
