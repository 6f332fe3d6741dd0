import type { Clock } from '../lib/clock.js';
import type { Ledger } from '../ledger/service.js';
import type { Receipts } from '../receipts/service.js';
import type { Store } from '../store/index.js';
import type { PeriodCharge } from '../mandates/records.js';
import type { ActionRecord } from './records.js';
import { gateRepo } from './repo.js';

/**
 * How an action that waited for a person ends (docs/gate.md#approvals-and-the-kill-switch): the
 * gate's contract with approvals. Actions stay written by the gate's repo alone; approvals end a
 * waiting action through this, inside their own store.write(), so the approval's change, the
 * action's outcome and their ledger records land together or not at all.
 *
 * Each method only reads and writes the store (and signs a receipt from a key in it): it may run
 * more than once, as any write function may.
 */
export interface PendingActions {
  /**
   * Inside the caller's write: the waiting action ends denied with these signals and reason;
   * `evidenceRecord` is the ledger record the caller wrote for it (the denial, the expiry, or a
   * fresh check's deny). A payment whose request asked for AP2 gets its AP2 rejection receipt
   * (status Error, naming why) here, as a denial at authorize does. Writes the action.
   */
  denyInWrite(
    action: ActionRecord,
    outcome: { signals: string[]; reason: string; evidenceRecord: string },
  ): Promise<ActionRecord>;
  /**
   * Inside the caller's write: the waiting action, approved by people and allowed by a fresh
   * check (`ruleId`, `charge`), ends allowed: its charge counts in the period, a payment gets its
   * receipt (`hum: true`) and the protocol receipts its request asked for, and an `action.allowed` ledger record by `actor` names the approval.
   * Writes the period usage, the action and that record.
   */
  allowInWrite(
    action: ActionRecord,
    approved: {
      approvalId: string;
      ruleId: string;
      charge: PeriodCharge | null;
      reason: string;
      actor: string;
      nowMs: number;
    },
  ): Promise<ActionRecord>;
}

export function createPendingActions(deps: {
  store: Store;
  ledger: Ledger;
  receipts: Receipts;
  clock: Clock;
}): PendingActions {
  const { ledger, receipts, clock } = deps;
  const repo = gateRepo(deps.store);
  return {
    async denyInWrite(action, outcome) {
      const denied: ActionRecord = {
        ...action,
        decision: 'deny',
        status: 'denied',
        signals: outcome.signals,
        reason: outcome.reason,
        evidenceRecord: outcome.evidenceRecord,
      };
      if (denied.payment && denied.protocols?.ap2) {
        const subject = { id: denied.id, agentId: denied.agentId, payment: denied.payment };
        const issued = await receipts.issueProtocolInWrite(
          { ...subject, outcome: { decision: 'deny', signals: denied.signals, reason: denied.reason } },
          denied.protocols,
          clock.now(),
        );
        Object.assign(denied, issued);
      }
      await repo.putAction(denied);
      return denied;
    },

    async allowInWrite(action, approved) {
      const allowed: ActionRecord = {
        ...action,
        decision: 'allow',
        status: 'allowed',
        signals: [],
        ruleId: approved.ruleId,
        reason: approved.reason,
        charge: approved.charge,
      };
      if (allowed.charge) await repo.add(action.workspaceId, action.agentId, allowed.charge, allowed.charge.amount);
      if (allowed.payment) allowed.receipt = await receipts.issueInWrite(allowed, true, approved.nowMs);
      if (allowed.payment && allowed.protocols) {
        const subject = { id: allowed.id, agentId: allowed.agentId, payment: allowed.payment };
        const issued = await receipts.issueProtocolInWrite(
          { ...subject, outcome: { decision: 'allow' } },
          allowed.protocols,
          approved.nowMs,
        );
        Object.assign(allowed, issued);
      }
      await ledger.record({
        workspaceId: action.workspaceId,
        actor: approved.actor,
        kind: 'action.allowed',
        subject: action.id,
        data: {
          approvalId: approved.approvalId,
          ruleId: approved.ruleId,
          receipt: allowed.receipt !== null,
          hum: true,
        },
      });
      await repo.putAction(allowed);
      return allowed;
    },
  };
}
