/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts; ids: src/lib/ids.ts). Types only: the store imports
 * them, so nothing here runs (test/architecture/layers.test.ts holds it to that).
 */

/** What a drill found, kept for the scorecard (the whole report is also in the ledger). */
export interface DrillReportRecord {
  id: string;
  tokenId: string;
  passed: boolean;
  points: Array<{ point: string; passed: boolean; timeToEffectMs: number | null }>;
  startedAt: string;
  finishedAt: string;
}
