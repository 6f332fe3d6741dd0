import { dataDirFlag, SvcCommand, storeFlag } from '../../src/cli/base-command.js';
import { openLocal } from '../../src/cli/local.js';

import type { RotatedKeys } from '../../src/receipts/service.js';

export default class KeysRotateReceiptKey extends SvcCommand {
  static override summary =
    'Add new receipt signing keys (Ed25519, and ES256 for AP2 and ACP); receipts signed by the old ones keep verifying.';
  static override description =
    "Works on the store directly, also while the server runs: the server signs with the new key from its next receipt on. The old keys are retired (they sign nothing more) and stay in /.well-known/jwks.json. The change is recorded in every workspace's ledger.";
  static override examples = ['<%= config.bin %> keys rotate-receipt-key --data-dir /var/lib/svc --json'];
  static override flags = { 'data-dir': dataDirFlag, store: storeFlag };

  async run(): Promise<RotatedKeys> {
    const { flags } = await this.parse(KeysRotateReceiptKey);
    const app = await openLocal(flags['data-dir'], { store: flags.store });
    try {
      const rotated = await app.services.receipts.rotateKey('operator:cli');
      this.log(
        `New receipt key ${rotated.kid}${rotated.retiredKid ? `; ${rotated.retiredKid} is retired and still published` : ''}.`,
      );
      this.log(
        `New ES256 receipt key ${rotated.es256Kid}${rotated.retiredEs256Kid ? `; ${rotated.retiredEs256Kid} is retired and still published` : ''}.`,
      );
      return rotated;
    } finally {
      await app.close();
    }
  }
}
