import { dataDirFlag, SvcCommand, storeFlag } from '../../src/cli/base-command.js';
import { openLocal } from '../../src/cli/local.js';

type Rotated = { kid: string; retiredKid: string | null; createdAt: string };

export default class KeysRotateReceiptKey extends SvcCommand {
  static override summary = 'Add a new receipt signing key; receipts signed by the old one keep verifying.';
  static override description =
    "Works on the store directly, also while the server runs: the server signs with the new key from its next receipt on. The old key is retired (it signs nothing more) and stays in /.well-known/jwks.json. The change is recorded in every workspace's ledger.";
  static override examples = ['<%= config.bin %> keys rotate-receipt-key --data-dir /var/lib/svc --json'];
  static override flags = { 'data-dir': dataDirFlag, store: storeFlag };

  async run(): Promise<Rotated> {
    const { flags } = await this.parse(KeysRotateReceiptKey);
    const app = await openLocal(flags['data-dir'], { store: flags.store });
    try {
      const rotated = await app.services.receipts.rotateKey('operator:cli');
      this.log(
        `New receipt key ${rotated.kid}${rotated.retiredKid ? `; ${rotated.retiredKid} is retired and still published` : ''}.`,
      );
      return rotated;
    } finally {
      await app.close();
    }
  }
}
