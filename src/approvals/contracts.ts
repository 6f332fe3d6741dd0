import type { ApprovalRecord } from './records.js';

/**
 * What approvals need of the kill switch, declared here so that approvals stand below it: a fleet
 * freeze a person approved is applied inside the approval's own write (the kill switch gives it;
 * `app.ts` hands it over). Resolves with the ids of the agents it froze.
 */
export interface ApprovedFreezes {
  applyApprovedFreezeInWrite(
    wid: string,
    freeze: NonNullable<ApprovalRecord['freeze']>,
    approver: string,
  ): Promise<string[]>;
}
