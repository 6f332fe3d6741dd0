import { Flags } from '@oclif/core';
import { dataDirFlag, EXIT, SvcCommand, urlFlag } from '../../src/cli/base-command.js';
import { callServer } from '../../src/cli/http-client.js';
import { openLocal, pickWorkspace } from '../../src/cli/local.js';
import { mintKeySchema, type KeyView, type MintKeyInput } from '../../src/keys/index.js';

type Minted = KeyView & { key: string };

/** http to anything but this machine. */
function sendsInClear(url: string): boolean {
  try {
    const { protocol, hostname } = new URL(url);
    return (
      protocol === 'http:' &&
      !['127.0.0.1', 'localhost', '[::1]', '::1'].includes(hostname) &&
      !hostname.startsWith('127.')
    );
  } catch {
    return false;
  }
}

export default class KeysCreate extends SvcCommand {
  static override summary = 'Mint a key; its value is printed once.';
  static override description =
    "Through the server with an admin workspace key (SVC_ADMIN_KEY), or with --local on the store directly (the operator's root of trust).";
  static override examples = [
    '<%= config.bin %> keys create --scope admin --local --name ops',
    'SVC_ADMIN_KEY=ask_... <%= config.bin %> keys create --scope inference --principal alice --team search --json',
    '<%= config.bin %> keys create --scope agent --agent agt_... --local',
  ];
  static override flags = {
    scope: Flags.string({ description: 'key scope', options: ['agent', 'inference', 'admin'], required: true }),
    agent: Flags.string({ description: 'the agent an agent key is bound to (agt_...)' }),
    principal: Flags.string({ description: 'person or service the traffic is bound to' }),
    team: Flags.string({ description: 'team the traffic is bound to' }),
    'task-class': Flags.string({ description: 'default task class, dotted' }),
    'policy-profile': Flags.string({ description: 'policy profile' }),
    name: Flags.string({ description: 'display name' }),
    workspace: Flags.string({ description: 'workspace id (with --local, when the store has several)' }),
    local: Flags.boolean({ description: 'write to the store directly instead of calling the server' }),
    'data-dir': dataDirFlag,
    url: urlFlag,
    'admin-key': Flags.string({ description: 'admin workspace key for the server', env: 'SVC_ADMIN_KEY' }),
  };

  async run(): Promise<Minted> {
    const { flags } = await this.parse(KeysCreate);
    const raw = {
      scope: flags.scope,
      name: flags.name,
      principal: flags.principal,
      team: flags.team,
      defaultTaskClass: flags['task-class'],
      policyProfile: flags['policy-profile'],
      agentId: flags.agent,
    };
    const { value, error } = mintKeySchema.validate(
      Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== undefined)),
      { abortEarly: false },
    );
    if (error) this.fail(error.details.map((d) => d.message).join('; '), EXIT.usage, 'invalid_request');
    const input = value as MintKeyInput;

    let minted: Minted;
    if (flags.local) {
      const app = await openLocal(flags['data-dir']);
      try {
        minted = await app.services.keys.mint(pickWorkspace(app, flags.workspace), input, 'operator:cli');
      } finally {
        await app.close();
      }
    } else {
      if (!flags['admin-key'])
        this.fail(
          'no admin key: set SVC_ADMIN_KEY (or --admin-key), or use --local on the store',
          EXIT.usage,
          'unauthenticated',
        );
      if (sendsInClear(flags.url))
        this.logToStderr(
          `warning: ${flags.url} is plain http to another machine: the admin key crosses the network in clear. Use https.`,
        );
      minted = await callServer<Minted>(flags.url, 'POST', '/v1/admin/keys', {
        bearer: flags['admin-key'],
        body: input,
      });
    }
    this.log(minted.key);
    this.logToStderr(`${minted.scope} key ${minted.id} in ${minted.workspaceId}: shown once, stored only as a hash.`);
    return minted;
  }
}
