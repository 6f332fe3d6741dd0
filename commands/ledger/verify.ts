import { Flags } from '@oclif/core';
import { dataDirFlag, EXIT, SvcCommand, storeFlag } from '../../src/cli/base-command.js';
import { describeLedger } from '../../src/cli/ledger-text.js';
import { openLocal } from '../../src/cli/local.js';
import { BundleReadError, readBundle } from '../../src/ledger/bundle.js';
import { verifyLedger, type LedgerVerifyReport } from '../../src/ledger/verify.js';

type Result = {
  ok: boolean;
  ledgers: Array<LedgerVerifyReport & { workspaceId?: string }>;
  keysFrom: 'store' | 'bundle' | 'file';
};

export default class LedgerVerify extends SvcCommand {
  static override summary = "Recompute the ledger's Merkle tree and check its signed checkpoints.";
  static override description =
    'In the store (--data-dir; works while the server runs, and on a read-only copy) or in an evidence bundle (--bundle). Exit 1 on any break, naming the first bad record index.';
  static override examples = [
    '<%= config.bin %> ledger verify --data-dir /var/lib/svc',
    '<%= config.bin %> ledger verify --bundle evidence.json --jwks jwks.json --json',
  ];
  static override flags = {
    'data-dir': dataDirFlag,
    store: storeFlag,
    workspace: Flags.string({ description: "only this workspace's ledger (default: every workspace)" }),
    bundle: Flags.string({ description: 'an evidence bundle file (GET /v1/admin/evidence) instead of the store' }),
    jwks: Flags.string({ description: "with --bundle: a JWKS file to trust instead of the bundle's own" }),
  };

  async run(): Promise<Result> {
    const { flags } = await this.parse(LedgerVerify);
    const result = flags.bundle ? this.verifyBundle(flags.bundle, flags.jwks) : await this.verifyStore(flags);
    for (const l of result.ledgers) this.log(describeLedger(l));
    if (!result.ok) this.checkedFalse();
    return result;
  }

  private verifyBundle(file: string, jwksFile: string | undefined): Result {
    const input = (() => {
      try {
        return readBundle(file, jwksFile);
      } catch (err) {
        if (err instanceof BundleReadError) this.fail(err.message, EXIT.usage, 'invalid_request');
        throw err;
      }
    })();
    // A bundle's own key set proves only that the bundle agrees with itself.
    if (!jwksFile)
      this.logToStderr(
        "note: the signing keys came from the bundle itself; pass --jwks with the deployment's published keys to check who signed it",
      );
    const report = verifyLedger(input);
    return { ok: report.ok, ledgers: [report], keysFrom: jwksFile ? 'file' : 'bundle' };
  }

  private async verifyStore(flags: {
    'data-dir'?: string | undefined;
    store?: string | undefined;
    workspace?: string | undefined;
  }) {
    const app = await openLocal(flags['data-dir'], { readOnly: true, store: flags.store });
    try {
      const { ledger } = app.services;
      const wids = flags.workspace ? [flags.workspace] : await ledger.workspaces();
      const ledgers = await Promise.all(wids.map(async (wid) => ({ workspaceId: wid, ...(await ledger.verify(wid)) })));
      return { ok: ledgers.every((l) => l.ok), ledgers, keysFrom: 'store' as const };
    } finally {
      await app.close();
    }
  }
}
