import { Flags } from '@oclif/core';
import { withAdmin } from '../../src/cli/admin.js';
import { EXIT, SvcCommand } from '../../src/cli/base-command.js';
import { sendsInClear, type MintedKey } from '../../src/cli/client.js';
import { adminKeyFlags, localFlags } from '../../src/cli/flags.js';
import { MAX_KEY_DAYS, mintKeySchema, type MintKeyInput } from '../../src/keys/index.js';

export default class KeysCreate extends SvcCommand {
  static override summary = 'Mint a key; its value is printed once.';
  static override description =
    "Through the server with an admin workspace key (SVC_ADMIN_KEY), or with --local on the store directly (the operator's root of trust).";
  static override examples = [
    '<%= config.bin %> keys create --scope admin --local --name ops',
    'SVC_ADMIN_KEY=ask_... <%= config.bin %> keys create --scope inference --principal alice --team search --json',
    '<%= config.bin %> keys create --scope agent --agent agt_... --local',
    '<%= config.bin %> keys create --scope inference --name ci-run --expires-in-days 30 --local --json',
  ];
  static override flags = {
    scope: Flags.string({ description: 'key scope', options: ['agent', 'inference', 'admin'], required: true }),
    agent: Flags.string({ description: 'the agent an agent key is bound to (agt_...)' }),
    principal: Flags.string({ description: 'person or service the traffic is bound to' }),
    team: Flags.string({ description: 'team the traffic is bound to' }),
    'task-class': Flags.string({ description: 'default task class, dotted' }),
    'policy-profile': Flags.string({ description: 'policy profile' }),
    name: Flags.string({ description: 'display name' }),
    'expires-in-days': Flags.integer({
      description: `days until the key is refused, as a revoked one is (1-${MAX_KEY_DAYS}); without it, the key never expires`,
    }),
    ...localFlags,
    ...adminKeyFlags,
  };

  async run(): Promise<MintedKey> {
    const { flags } = await this.parse(KeysCreate);
    const raw = {
      scope: flags.scope,
      name: flags.name,
      principal: flags.principal,
      team: flags.team,
      defaultTaskClass: flags['task-class'],
      policyProfile: flags['policy-profile'],
      agentId: flags.agent,
      expiresInDays: flags['expires-in-days'],
    };
    const { value, error } = mintKeySchema.validate(JSON.parse(JSON.stringify(raw)), { abortEarly: false });
    if (error)
      this.fail(
        error.details.map((d) => d.message).join('; '),
        EXIT.usage,
        'invalid_request',
        'Correct the flags the message names; svc keys create --help lists them.',
      );
    if (!flags.local && flags['admin-key'] && sendsInClear(flags.url))
      this.logToStderr(
        `warning: ${flags.url} is plain http to another machine: the admin key crosses in clear. Use https.`,
      );
    const minted = await withAdmin(flags, flags['admin-key'], (a) => a.mintKey(value as MintKeyInput), 'admin-key');
    this.log(minted.key);
    this.logToStderr(
      `${minted.scope} key ${minted.id} in ${minted.workspaceId}${minted.expiresAt ? `, expires ${minted.expiresAt}` : ''}: shown once, stored only as a hash.`,
    );
    return minted;
  }
}
