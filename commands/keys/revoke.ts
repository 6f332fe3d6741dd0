import { Args } from '@oclif/core';
import { withAdmin } from '../../src/cli/admin.js';
import { SvcCommand } from '../../src/cli/base-command.js';
import { adminKeyFlags, localFlags } from '../../src/cli/flags.js';

export default class KeysRevoke extends SvcCommand {
  static override summary = 'Revoke a workspace key: its very next request is refused.';
  static override description =
    'Through the server with an admin workspace key (SVC_ADMIN_KEY), or --local on the store directly (also while the server runs). The same ledger record (key.revoked) as the console writes.';
  static override examples = [
    'SVC_ADMIN_KEY=ask_... <%= config.bin %> keys revoke key_...',
    '<%= config.bin %> keys revoke key_... --local --json',
  ];
  static override args = { id: Args.string({ description: 'the key record (key_...)', required: true }) };
  static override flags = { ...localFlags, ...adminKeyFlags };

  async run(): Promise<{ id: string; revoked: true }> {
    const { args, flags } = await this.parse(KeysRevoke);
    await withAdmin(flags, flags['admin-key'], (admin) => admin.revokeKey(args.id), 'admin-key');
    this.log(`Revoked ${args.id}.`);
    return { id: args.id, revoked: true };
  }
}
