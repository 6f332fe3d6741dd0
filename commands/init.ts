import { text } from 'node:stream/consumers';
import { Flags } from '@oclif/core';
import { createApp } from '../src/app.js';
import { dataDirFlag, EXIT, SvcCommand, storeFlag } from '../src/cli/base-command.js';
import { createLogger } from '../src/lib/log.js';
import { loadSettings } from '../src/settings/load.js';

export default class Init extends SvcCommand {
  static override summary = 'Set up an empty store: its first workspace and owner.';
  static override description =
    'The scripted form of the first start. Refuses (exit 2) if the store already has a workspace.';
  static override examples = [
    '<%= config.bin %> init --data-dir ./data --workspace Acme --owner-email ops@acme.example --owner-password-stdin < password.txt',
    '<%= config.bin %> init --workspace Acme --owner-email ops@acme.example --owner-password "$PW" --json',
  ];
  static override flags = {
    'data-dir': dataDirFlag,
    store: storeFlag,
    workspace: Flags.string({ description: 'name of the first workspace', required: true }),
    'owner-email': Flags.string({ description: "the owner's email, used to sign in", required: true }),
    'owner-password': Flags.string({
      description: "the owner's password (prefer --owner-password-stdin)",
      exactlyOne: ['owner-password', 'owner-password-stdin'],
    }),
    'owner-password-stdin': Flags.boolean({ description: "read the owner's password from standard input" }),
  };

  async run(): Promise<{ workspaceId: string; ownerId: string }> {
    const { flags } = await this.parse(Init);
    const password = flags['owner-password'] ?? (await text(process.stdin)).replace(/\r?\n$/, '');
    if (password.length < 12)
      this.fail(
        'the owner password must have at least 12 characters',
        EXIT.usage,
        'invalid_request',
        'Pass an --owner-password (or standard input) of at least 12 characters.',
      );
    if (!/^[^@\s]+@[^@\s]+$/.test(flags['owner-email']))
      this.fail(
        '--owner-email is not an email address',
        EXIT.usage,
        'invalid_request',
        'Pass --owner-email as name@example.com.',
      );
    const settings = loadSettings({ overrides: { dataDir: flags['data-dir'], storeUrl: flags.store } });
    // Lazy: init uses the people and the signing keys, none of the server's own services (app.ts).
    const app = await createApp(settings, { migrate: true, create: true, log: createLogger('warn'), lazy: true });
    try {
      if ((await app.services.people.workspaceCount()) > 0) {
        this.fail(
          `the store in ${settings.dataDir} already has a workspace; init only sets up an empty store`,
          EXIT.usage,
          'already_initialised',
        );
      }
      const created = await app.services.people.createWorkspace({
        name: flags.workspace,
        ownerEmail: flags['owner-email'],
        ownerPassword: password,
        firstOnly: true,
      });
      await app.services.signingKeys.ensure();
      this.log(
        `Workspace "${flags.workspace}" ${created.workspaceId}, owner ${flags['owner-email']} ${created.ownerId}.`,
      );
      return created;
    } finally {
      await app.close();
    }
  }
}
