import { BundleReadError, readBundle } from '../ledger/bundle.js';
import { verifyLedger, type LedgerVerifyReport } from '../ledger/verify.js';
import { CliFailure, EXIT } from './base-command.js';
import { openLocal } from './local.js';

/** What `svc ledger verify` found (its --json output). */
export type LedgerCheck = {
  ok: boolean;
  ledgers: Array<LedgerVerifyReport & { workspaceId?: string }>;
  keysFrom: 'store' | 'bundle' | 'file' | 'key';
};

/**
 * Verifies an evidence bundle, against a JWKS file when one is given; without it, `note` is told
 * that the bundle's own keys prove only that it agrees with itself. An unreadable bundle is a
 * usage error.
 */
export function checkBundle(file: string, jwksFile: string | undefined, note: (line: string) => void): LedgerCheck {
  let input: ReturnType<typeof readBundle>;
  try {
    input = readBundle(file, jwksFile);
  } catch (err) {
    if (err instanceof BundleReadError)
      throw new CliFailure(err.message, { exit: EXIT.usage, type: 'invalid_request' });
    throw err;
  }
  if (!jwksFile)
    note(
      "note: the signing keys came from the bundle itself; pass --jwks with the deployment's published keys to check who signed it",
    );
  const report = verifyLedger(input);
  return { ok: report.ok, ledgers: [report], keysFrom: jwksFile ? 'file' : 'bundle' };
}

/** Verifies the ledgers in a store, read-only (works while the server runs): one workspace's, or every one. */
export async function checkStore(options: {
  dataDir: string | undefined;
  store: string | undefined;
  workspace: string | undefined;
}): Promise<LedgerCheck> {
  const app = await openLocal(options.dataDir, { readOnly: true, store: options.store });
  try {
    const { ledger } = app.services;
    const wids = options.workspace ? [options.workspace] : await ledger.workspaces();
    const ledgers = await Promise.all(wids.map(async (wid) => ({ workspaceId: wid, ...(await ledger.verify(wid)) })));
    return { ok: ledgers.every((l) => l.ok), ledgers, keysFrom: 'store' };
  } finally {
    await app.close();
  }
}
