import type { Store } from '../store/index.js';
import type { ApprovalRecord } from '../approvals/records.js';
import type { DrillReportRecord } from '../drills/records.js';
import type { ActionRecord } from '../gate/records.js';

/** What the scorecard reads of a workspace: its drills' reports, its approvals and its actions. */
export function scorecardRepo(store: Store) {
  const t = store.tables;
  return {
    async drillReports(wid: string): Promise<DrillReportRecord[]> {
      return (await t.drillReports.scan([wid])).map((e) => e.value);
    },
    async approvals(wid: string): Promise<ApprovalRecord[]> {
      return (await t.approvals.scan([wid])).map((e) => e.value);
    },
    async actions(wid: string): Promise<ActionRecord[]> {
      return (await t.actions.scan([wid])).map((e) => e.value);
    },
  };
}
