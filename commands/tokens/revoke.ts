import { Args } from '@oclif/core';
import { withAdmin } from '../../src/cli/admin.js';
import { SvcCommand } from '../../src/cli/base-command.js';
import { localFlags, localOnly, tokenFlags } from '../../src/cli/flags.js';

export default class TokensRevoke extends SvcCommand {
  static override summary = 'Revoke a service token: its very next request is refused.';
  static override description =
    "An owner's act, so --local only (on the store, also while the server runs): the same ledger record (service_token.revoked) as the console writes.";
  static override examples = ['<%= config.bin %> tokens revoke tok_... --local'];
  static override args = { id: Args.string({ description: 'the token record (tok_...)', required: true }) };
  static override flags = { ...localFlags, ...tokenFlags('none: service tokens are --local only') };

  async run(): Promise<{ id: string; revoked: true }> {
    const { args, flags } = await this.parse(TokensRevoke);
    if (!flags.local) localOnly('svc tokens revoke', "service tokens are an owner's to manage");
    await withAdmin(flags, undefined, (admin) => admin.revokeToken(args.id));
    this.log(`Revoked ${args.id}.`);
    return { id: args.id, revoked: true };
  }
}
