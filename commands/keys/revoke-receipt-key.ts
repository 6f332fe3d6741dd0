import { Args } from '@oclif/core';
import { dataDirFlag, SvcCommand, storeFlag } from '../../src/cli/base-command.js';
import { openLocal } from '../../src/cli/local.js';

type Revoked = { kid: string; revokedAt: string };

export default class KeysRevokeReceiptKey extends SvcCommand {
  static override summary = 'Revoke a retired receipt signing key (a compromised one).';
  static override description =
    'The key leaves /.well-known/jwks.json, and online verification of the receipts it signed answers reason "revoked". The current key cannot be revoked: run `svc keys rotate-receipt-key` first. Recorded in the ledger.';
  // A kid is base64url and may start with "-": put it after "--", last.
  static override examples = [
    '<%= config.bin %> keys rotate-receipt-key && <%= config.bin %> keys revoke-receipt-key --data-dir /var/lib/svc -- -TpKZLx8SRxQI9mVY2-hdXVGFCLeQcex-ztABmItgUA',
  ];
  static override args = { kid: Args.string({ description: 'the key id (kid) to revoke', required: true }) };
  static override flags = { 'data-dir': dataDirFlag, store: storeFlag };

  async run(): Promise<Revoked> {
    const { args, flags } = await this.parse(KeysRevokeReceiptKey);
    const app = await openLocal(flags['data-dir'], { store: flags.store });
    try {
      const revoked = await app.services.receipts.revokeKey(args.kid, 'operator:cli');
      this.log(`Receipt key ${revoked.kid} revoked; receipts it signed no longer verify.`);
      return revoked;
    } finally {
      await app.close();
    }
  }
}
