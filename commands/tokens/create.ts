import { Flags } from '@oclif/core';
import { withAdmin } from '../../src/cli/admin.js';
import { EXIT, SvcCommand } from '../../src/cli/base-command.js';
import { localFlags, localOnly, tokenFlags } from '../../src/cli/flags.js';
import { createTokenSchema, serviceTokenScopes, type CreateTokenInput } from '../../src/service-tokens/index.js';
import type { ServiceTokenView } from '../../src/service-tokens/index.js';

export default class TokensCreate extends SvcCommand {
  static override summary = 'Mint a service token for automation; its value is printed once.';
  static override description =
    "An owner's act, so --local only (on the store, the operator's root of trust): the same token and ledger record (service_token.created) as the console makes. Every token expires, at most 90 days after creation. Only its hash is stored.";
  static override examples = [
    '<%= config.bin %> tokens create --name ci-kill --scope agents:freeze --scope agents:read --expires-in-days 30 --local',
    '<%= config.bin %> tokens create --name ci --scope agents:read --expires-in-days 7 --ip-allow 10.0.0.0/8 --local --json',
  ];
  static override flags = {
    name: Flags.string({ description: 'one word; the ledger names the token by it', required: true }),
    scope: Flags.string({
      description: 'a scope; repeatable',
      options: [...serviceTokenScopes],
      multiple: true,
      required: true,
    }),
    'expires-in-days': Flags.integer({ description: 'days until it expires (1-90)', required: true }),
    'ip-allow': Flags.string({
      description: 'an address or CIDR range it may be used from; repeatable',
      multiple: true,
    }),
    ...localFlags,
    ...tokenFlags('none: service tokens are --local only'),
  };

  async run(): Promise<ServiceTokenView & { token: string }> {
    const { flags } = await this.parse(TokensCreate);
    if (!flags.local) localOnly('svc tokens create', "a service token is an owner's to mint");
    const { value, error } = createTokenSchema.validate(
      { name: flags.name, scopes: flags.scope, expiresInDays: flags['expires-in-days'], ipAllow: flags['ip-allow'] },
      { abortEarly: false },
    );
    if (error)
      this.fail(
        error.details.map((d) => d.message).join('; '),
        EXIT.usage,
        'invalid_request',
        'Correct the flags the message names; svc tokens create --help lists them.',
      );
    const created = await withAdmin(flags, undefined, (a) => a.createToken(value as CreateTokenInput));
    this.log(created.token);
    this.logToStderr(`service token ${created.id} (${created.name}) expires ${created.expiresAt}: shown once.`);
    return created;
  }
}
