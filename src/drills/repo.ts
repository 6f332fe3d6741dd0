import type { Store } from '../store/index.js';
import type { DrillReportRecord } from './records.js';

/**
 * Drills' reads and writes: when a token last ran a drill in a workspace ([wid, tokenId], for the
 * cooldown), and each drill's report ([wid, startedAt, tokenId], for the scorecard).
 */
export function drillsRepo(store: Store) {
  const t = store.tables;
  return {
    lastRun(wid: string, tokenId: string): Promise<string | undefined> {
      return t.drills.get([wid, tokenId]);
    },
    /** Only inside store.write(). */
    putLastRun(wid: string, tokenId: string, at: string): Promise<void> {
      return t.drills.put([wid, tokenId], at);
    },
    /** Only inside store.write(). */
    putReport(wid: string, report: DrillReportRecord): Promise<void> {
      return t.drillReports.put([wid, report.startedAt, report.tokenId], report);
    },
    async reports(wid: string): Promise<DrillReportRecord[]> {
      return (await t.drillReports.scan([wid])).map((e) => e.value);
    },
  };
}
