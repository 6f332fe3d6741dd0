import { dataDirFlag, SvcCommand, storeFlag } from '../../src/cli/base-command.js';
import { Flags } from '@oclif/core';
import { ledgerKeyLines, type LedgerKeyLine } from '../../src/cli/ledger-remote.js';

export default class LedgerKey extends SvcCommand {
  static override summary = "Print each workspace ledger's signed-note verifier key.";
  static override description =
    'The key outside verifiers check checkpoints with (<origin>+<key id>+<base64 key>): give it to `svc ledger verify --url … --key …` or to any C2SP signed-note verifier. One line per workspace and published ledger key, the current key marked; reads the store (--data-dir), read-only.';
  static override examples = [
    '<%= config.bin %> ledger key --data-dir /var/lib/svc --workspace ws_123',
    '<%= config.bin %> ledger key --json',
  ];
  static override flags = {
    'data-dir': dataDirFlag,
    store: storeFlag,
    workspace: Flags.string({ description: "only this workspace's ledger (default: every workspace)" }),
  };

  async run(): Promise<LedgerKeyLine[]> {
    const { flags } = await this.parse(LedgerKey);
    const lines = await ledgerKeyLines({ dataDir: flags['data-dir'], store: flags.store, workspace: flags.workspace });
    for (const l of lines) this.log(`${l.workspaceId} ${l.verifierKey}${l.current ? '' : ' (retired)'}`);
    return lines;
  }
}
