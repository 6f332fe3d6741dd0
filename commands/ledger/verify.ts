import { readFileSync } from 'node:fs';
import { Flags } from '@oclif/core';
import { dataDirFlag, EXIT, SvcCommand } from '../../src/cli/base-command.js';
import { openLocal } from '../../src/cli/local.js';
import { verifyLedger, type LedgerVerifyReport } from '../../src/ledger/verify.js';

type Result = {
  ok: boolean;
  ledgers: Array<LedgerVerifyReport & { workspaceId?: string }>;
  keysFrom: 'store' | 'bundle' | 'file';
};

function readJson(file: string, what: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read the ${what} ${file}: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * A bundle's records may be record objects (hashed in their RFC 8785 form) or { bytes } with the
 * decoded `record` beside them (API.md 5), which must then be exactly the parse of the bytes.
 */
function bundleInput(bundle: Record<string, unknown>, jwks: unknown) {
  const records = (Array.isArray(bundle.records) ? bundle.records : []) as unknown[];
  return {
    origin: String(bundle.origin ?? ''),
    // Each record as its exact hashed bytes (with the leaf hash when the bundle gives one), or a
    // bare record object.
    records: records.map((r) => {
      const entry = r as { bytes?: unknown; leaf?: unknown; record?: unknown };
      if (r && typeof r === 'object' && typeof entry.bytes === 'string') {
        return {
          bytes: entry.bytes,
          ...(typeof entry.leaf === 'string' ? { leaf: entry.leaf } : {}),
          ...('record' in entry ? { record: entry.record } : {}),
        };
      }
      return { bytes: JSON.stringify(r) };
    }),
    consistency: (Array.isArray(bundle.consistency) ? bundle.consistency : []) as Array<{
      from: number;
      to: number;
      proof: string[];
    }>,
    checkpoints: ((Array.isArray(bundle.checkpoints) ? bundle.checkpoints : []) as unknown[]).map((c) => ({
      note: typeof c === 'string' ? c : String((c as { note?: unknown }).note ?? ''),
    })),
    jwks: (jwks ?? bundle.jwks ?? { keys: [] }) as { keys: object[] },
  };
}

export default class LedgerVerify extends SvcCommand {
  static override summary = "Recompute the ledger's Merkle tree and check its signed checkpoints.";
  static override description =
    'In the store (--data-dir; works while the server runs) or in an evidence bundle (--bundle). Exit 1 on any break, naming the first bad record index.';
  static override examples = [
    '<%= config.bin %> ledger verify --data-dir /var/lib/svc',
    '<%= config.bin %> ledger verify --bundle evidence.json --jwks jwks.json --json',
  ];
  static override flags = {
    'data-dir': dataDirFlag,
    workspace: Flags.string({ description: "only this workspace's ledger (default: every workspace)" }),
    bundle: Flags.string({ description: 'an evidence bundle file (GET /v1/admin/evidence) instead of the store' }),
    jwks: Flags.string({ description: "with --bundle: a JWKS file to trust instead of the bundle's own" }),
  };

  async run(): Promise<Result> {
    const { flags } = await this.parse(LedgerVerify);
    let result: Result;
    if (flags.bundle) {
      let bundle: Record<string, unknown>;
      let jwks: unknown;
      try {
        bundle = readJson(flags.bundle, 'bundle') as Record<string, unknown>;
        jwks = flags.jwks ? readJson(flags.jwks, 'JWKS file') : undefined;
      } catch (err) {
        this.fail((err as Error).message, EXIT.usage, 'invalid_request');
      }
      const report = verifyLedger(bundleInput(bundle, jwks));
      result = { ok: report.ok, ledgers: [report], keysFrom: flags.jwks ? 'file' : 'bundle' };
      if (!flags.jwks) {
        // A bundle's own key set proves only that the bundle agrees with itself.
        this.logToStderr(
          "note: the signing keys came from the bundle itself; pass --jwks with the deployment's published keys to check who signed it",
        );
      }
    } else {
      const app = await openLocal(flags['data-dir'], { readOnly: true });
      try {
        const wids = flags.workspace ? [flags.workspace] : app.services.ledger.workspaces();
        const ledgers = wids.map((wid) => ({ workspaceId: wid, ...app.services.ledger.verify(wid) }));
        result = { ok: ledgers.every((l) => l.ok), ledgers, keysFrom: 'store' };
      } finally {
        await app.close();
      }
    }
    for (const l of result.ledgers) {
      this.log(
        l.ok
          ? `ok ${l.origin}: ${l.size} records, ${l.checkpoints} signed checkpoints${l.uncheckpointed ? `, ${l.uncheckpointed} records after the last checkpoint` : ''}`
          : `BROKEN ${l.origin}: ${l.problem}${l.firstBadIndex === null ? '' : ` (first bad record: index ${l.firstBadIndex})`}`,
      );
    }
    if (!result.ok) this.checkedFalse();
    return result;
  }
}
