import { Flags } from '@oclif/core';
import { dataDirFlag, SvcCommand, storeFlag } from '../../src/cli/base-command.js';
import { checkBundle, checkStore, type LedgerCheck } from '../../src/cli/ledger-check.js';
import { verifyRemote } from '../../src/cli/ledger-remote.js';
import { describeLedger } from '../../src/cli/ledger-text.js';

export default class LedgerVerify extends SvcCommand {
  static override summary = "Recompute the ledger's Merkle tree and check its signed checkpoints.";
  static override description =
    'In the store (--data-dir; works while the server runs, and on a read-only copy) or in an evidence bundle (--bundle). Exit 1 on any break, naming the first bad record index.';
  static override examples = [
    '<%= config.bin %> ledger verify --data-dir /var/lib/svc',
    '<%= config.bin %> ledger verify --bundle evidence.json --jwks jwks.json --json',
    '<%= config.bin %> ledger verify --url https://svc.example.com/v1/ledger/ws_123/ --key "$(svc ledger key --workspace ws_123 | cut -d" " -f2)"',
    '<%= config.bin %> ledger verify --url https://svc.example.com/v1/ledger/ws_123/ --key "$KEY" --witness "$W1" --witness "$W2" --quorum 1',
  ];
  static override flags = {
    'data-dir': dataDirFlag,
    store: storeFlag,
    workspace: Flags.string({ description: "only this workspace's ledger (default: every workspace)" }),
    bundle: Flags.string({ description: 'an evidence bundle file (GET /v1/admin/evidence) instead of the store' }),
    jwks: Flags.string({ description: "with --bundle: a JWKS file to trust instead of the bundle's own" }),
    url: Flags.string({
      description: 'a ledger served in the tlog-tiles layout (…/v1/ledger/<workspace>/), verified from its tiles alone',
      exclusive: ['bundle'],
      dependsOn: ['key'],
    }),
    key: Flags.string({ description: 'with --url: the signed-note verifier key to trust (svc ledger key)' }),
    token: Flags.string({ description: 'with --url: a service token with evidence:read', env: 'SVC_TOKEN' }),
    witness: Flags.string({
      description: "with --url: a witness's cosignature verifier key (tlog-cosignature); repeat for each witness",
      multiple: true,
      dependsOn: ['url'],
    }),
    quorum: Flags.integer({
      description: 'with --witness: how many of the given witnesses must have cosigned the checkpoint (default: all)',
      min: 1,
      dependsOn: ['witness'],
    }),
  };

  async run(): Promise<LedgerCheck> {
    const { flags } = await this.parse(LedgerVerify);
    const result = flags.url
      ? await this.remote(flags.url, flags.key!, flags.token, flags.witness ?? [], flags.quorum)
      : flags.bundle
        ? checkBundle(flags.bundle, flags.jwks, (line) => this.logToStderr(line))
        : await checkStore({ dataDir: flags['data-dir'], store: flags.store, workspace: flags.workspace });
    if (result.ledgers.length === 0) this.log('ok: no ledger records yet, nothing to verify');
    for (const l of result.ledgers) this.log(describeLedger(l));
    if (!result.ok) this.checkedFalse();
    return result;
  }

  private async remote(
    url: string,
    key: string,
    token: string | undefined,
    witnesses: string[],
    quorum: number | undefined,
  ): Promise<LedgerCheck> {
    const report = await verifyRemote({
      url,
      key,
      witnesses,
      ...(token ? { token } : {}),
      ...(quorum === undefined ? {} : { quorum }),
    });
    return { ok: report.ok, ledgers: [report], keysFrom: 'key' };
  }
}
