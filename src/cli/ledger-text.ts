import type { LedgerVerifyReport } from '../ledger/verify.js';

/** One line per ledger verified, as `svc ledger verify` prints it on a terminal. */
export function describeLedger(l: LedgerVerifyReport): string {
  if (l.ok) {
    const after = l.uncheckpointed ? `, ${l.uncheckpointed} records after the last checkpoint` : '';
    const waiting = l.waiting ? `, ${l.waiting} records waiting to be integrated (each matches its hash)` : '';
    return `ok ${l.origin}: ${l.size} records, ${l.checkpoints} signed checkpoints${after}${waiting}`;
  }
  const first = l.firstBadIndex === null ? '' : ` (first bad record: index ${l.firstBadIndex})`;
  return `BROKEN ${l.origin}: ${l.problem}${first}`;
}
