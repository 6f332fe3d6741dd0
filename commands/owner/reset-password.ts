import { Flags } from '@oclif/core';
import { dataDirFlag, EXIT, SvcCommand, storeFlag } from '../../src/cli/base-command.js';
import { openLocal } from '../../src/cli/local.js';
import type { OwnerPasswordReset } from '../../src/people/recovery.js';

export default class OwnerResetPassword extends SvcCommand {
  static override summary = "Recover an owner's access: print a new one-time password.";
  static override description =
    "The operator's recovery, on the store directly (--local; also while the server runs): a new random password, shown once and stored only as a hash, which the owner must replace at the next sign-in. Every session of theirs ends, their lockouts are lifted, and each of their workspaces' ledgers records it (member.password_reset). --disable-two-factor also turns off their two-factor, for a lost authenticator.";
  static override examples = [
    '<%= config.bin %> owner reset-password --email admin@localhost --local',
    '<%= config.bin %> owner reset-password --email ops@acme.example --local --data-dir /var/lib/svc --json',
  ];
  static override flags = {
    email: Flags.string({ description: "the owner's email", required: true }),
    local: Flags.boolean({ description: 'work on the store directly (required: only the operator resets an owner)' }),
    'disable-two-factor': Flags.boolean({ description: 'also turn off their two-factor (a lost authenticator)' }),
    'data-dir': dataDirFlag,
    store: storeFlag,
  };

  async run(): Promise<OwnerPasswordReset> {
    const { flags } = await this.parse(OwnerResetPassword);
    if (!flags.local)
      this.fail(
        "an owner's password is reset on the store only: pass --local (and --data-dir)",
        EXIT.usage,
        'usage',
        'Run it where the store is, as the operator: svc owner reset-password --email E --local.',
      );
    const app = await openLocal(flags['data-dir'], { store: flags.store });
    try {
      const reset = await app.services.people.resetOwnerPassword(flags.email, {
        disableTwoFactor: flags['disable-two-factor'],
      });
      this.log(
        [
          `One-time password for ${reset.email}: ${reset.password}`,
          `It is shown this once. Sign in at /login and choose a new one; ${reset.sessionsEnded} session${reset.sessionsEnded === 1 ? '' : 's'} ended${reset.twoFactorDisabled ? ', two-factor turned off' : ''}.`,
        ].join('\n'),
      );
      return reset;
    } finally {
      await app.close();
    }
  }
}
