import { emptyHead, originOf, type LedgerParts } from './context.js';
import { rootFromFrontier, rootOf } from './merkle.js';
import { verifyLedger, type LedgerVerifyReport } from './verify.js';

/**
 * Checks a workspace's ledger in the store (see verify.ts), and that its head agrees. The reads
 * are not one snapshot, so they are ordered to stay consistent while others append: the head
 * and the checkpoints first, then the records (at least as many as that head counts, by then),
 * then the head again and the keys. A record count between the two heads' is appends made
 * meanwhile; any other count is a ledger whose head disagrees with its records. The waiting
 * records are read before all of that and checked against their hashes.
 */
export async function verifyStored(parts: LedgerParts, wid: string): Promise<LedgerVerifyReport> {
  const { repo, signingKeys } = parts;
  // Waiting first: an entry integrated meanwhile is then read twice (both checked), never missed.
  const waiting = (await repo.waiting(wid)).map((w) => w.entry);
  const [first, checkpoints] = await Promise.all([repo.head(wid), repo.checkpoints(wid)]);
  const records = await repo.entries(wid);
  const [last, jwks] = await Promise.all([repo.head(wid), signingKeys.jwks()]);
  const head = first ?? emptyHead();
  const sizeAfter = (last ?? emptyHead()).size;
  const report = verifyLedger({ origin: originOf(parts, wid, head), records, checkpoints, jwks, waiting });
  if (report.ok && (records.length < head.size || records.length > Math.max(head.size, sizeAfter))) {
    const counted = records.length < head.size ? head.size : Math.max(head.size, sizeAfter);
    return {
      ...report,
      ok: false,
      firstBadIndex: Math.min(counted, records.length),
      problem: `the ledger head counts ${counted} records but ${records.length} are stored`,
    };
  }
  if (
    report.ok &&
    head.checkpointSize > 0 &&
    !rootFromFrontier(head.checkpointFrontier, head.checkpointSize).equals(
      rootOf(records.slice(0, head.checkpointSize).map((r) => Buffer.from(r.bytes))),
    )
  ) {
    return { ...report, ok: false, problem: 'the ledger head does not match its records' };
  }
  return report;
}
