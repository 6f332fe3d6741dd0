import { withAdmin } from '../../src/cli/admin.js';
import { SvcCommand } from '../../src/cli/base-command.js';
import { localFlags, localOnly, tokenFlags } from '../../src/cli/flags.js';
import type { ServiceTokenView } from '../../src/service-tokens/index.js';

export default class TokensList extends SvcCommand {
  static override summary = 'List the service tokens of a workspace (never their values).';
  static override description = "An owner's act, so --local only (on the store).";
  static override examples = ['<%= config.bin %> tokens list --local --json'];
  static override flags = { ...localFlags, ...tokenFlags('none: service tokens are --local only') };

  async run(): Promise<{ data: ServiceTokenView[] }> {
    const { flags } = await this.parse(TokensList);
    if (!flags.local) localOnly('svc tokens list', "service tokens are an owner's to manage");
    const data = await withAdmin(flags, undefined, (admin) => admin.listTokens());
    for (const t of data)
      this.log(
        `${t.id}  ${t.name}  ${t.scopes.join(',')}  ${t.revokedAt ? `revoked ${t.revokedAt}` : `expires ${t.expiresAt}`}`,
      );
    return { data };
  }
}
