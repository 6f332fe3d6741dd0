import type { Clock } from '../lib/clock.js';
import type { Ledger } from '../ledger/service.js';
import type { ApprovedFreezes } from './contracts.js';
import type { PendingActions } from '../gate/pending.js';
import type { Store } from '../store/index.js';
import type { ApprovalRecord } from './records.js';
import type { ActionRecord } from '../gate/records.js';
import type { MandateRule } from '../mandates/records.js';
import type { Role } from '../people/records.js';
import { createApprove } from './approve.js';
import { createContext } from './context.js';
import { createDeny } from './deny.js';
import { expireDue } from './expire.js';
import { listApprovals, type ListOptions } from './list.js';
import { approvalsRepo } from './repo.js';
import { suggestRules, type Suggestion } from './suggestions.js';

/**
 * Human approvals (docs/gate.md#approvals-and-the-kill-switch). Decided only by signed-in people: no route a key
 * or token reaches calls this module.
 * Rules:
 * - Who may decide: owners and admins; members only for agents that act for them; when the rule
 *   names approvers, only those people (whatever their role).
 * - Separation of duties (the rule says so): the person the agent acts for may not approve its
 *   action (403 separation_of_duties). Denying stays open to them.
 * - Two-person rules (`count: 2`): each person approves once; the first approval is recorded and
 *   answered 409 second_person_required until a second, different person approves.
 * - An action of a stopped agent cannot be approved (403 agent_stopped); it can be denied.
 * - When the last approval arrives the action is checked afresh against the mandate and period
 *   usage as they are then: allowed, it gets its receipt with `hum: true`; limits used meanwhile
 *   turn it into a deny naming the signal (the approval then ends `denied` with that reason).
 * - An approval expires `ttl` after it was asked; its action is then denied (`approval_expired`).
 *   Deciding it afterwards is 409 approval_closed; so is deciding one already decided.
 * - Every approval, denial and expiry is a ledger record naming the person (or the system); a
 *   decision made from chat also names, in that same record, the channel and the chat user.
 * - Approvals and their expiry queue are written here alone: the gate and the kill switch open
 *   one through `openInWrite`; an action's outcome is written through the gate's contract
 *   (gate/pending.ts), a fleet freeze through the kill switch's.
 *
 * The operations, one file each: ./approve.ts, ./deny.ts, ./expire.ts, ./freeze-decision.ts,
 * ./list.ts, ./suggestions.ts.
 */
export interface Decider {
  userId: string;
  role: Role;
  actor: string;
  /** A decision made from chat (a mapped chat user's click), not in the console: recorded with it. */
  via?: { channel: 'chat-relay' | 'slack'; platform: string; chatUserId: string };
}

export interface ApprovalView {
  id: string;
  actionId: string;
  agentId: string;
  status: ApprovalRecord['status'];
  approvers: string[] | null;
  approvals: ApprovalRecord['approvals'];
  requiredApprovals: number;
  separationOfDuties: boolean;
  createdAt: string;
  expiresAt: string;
  decidedBy: string | null;
  reason: string | null;
  action: {
    type: string;
    summary: string;
    payment: ActionRecord['payment'];
    target: ActionRecord['target'];
    /** Why the gate asked a person: the rule and its threshold, as the action's `reason` says. */
    reason: string;
    /** The mandate rule that asked for the approval. */
    ruleId: string | null;
  } | null;
  /**
   * That rule as the agent's mandate holds it now: null when the mandate no longer has it (changed
   * since), or for a bulk freeze.
   */
  rule: MandateRule | null;
  /** For a bulk freeze waiting for a person: what would be frozen, and which token asked. */
  freeze: ApprovalRecord['freeze'] | null;
}

export type ApproveOutcome =
  | { kind: 'decided'; approval: ApprovalView }
  | { kind: 'waiting_for_second'; approval: ApprovalView }
  | { kind: 'expired'; approval: ApprovalView };

/**
 * Opening an approval, for the domains that ask a person (the gate for a review, the kill switch
 * for a token's freeze past the ceiling), inside their own write.
 */
export interface ApprovalOpener {
  /**
   * Inside the caller's store.write(): stores the waiting approval and its place on the expiry
   * queue together, so an approval never exists without its expiry (nor outside the caller's
   * write). Writes approvals and the expiry queue only.
   */
  openInWrite(approval: ApprovalRecord): Promise<void>;
}

/** The opener alone, on the store: for the gate and the kill switch, which approvals depend on. */
export function createApprovalOpener(store: Store): ApprovalOpener {
  const repo = approvalsRepo(store);
  return { openInWrite: (approval) => repo.open(approval) };
}

/**
 * Approvals as people decide them. Reads approvals, actions, agents, members, mandates and
 * period usage; writes approvals and their expiry queue, ledger records, and (through the gate's
 * and the kill switch's contracts) actions, period usage, receipts and agents' holds.
 */
export interface Approvals extends ApprovalOpener {
  /** Ends every waiting approval past its time (the server runs this periodically); answers how many. */
  expireDue(): Promise<number>;
  /**
   * Suggested rules (approvals:read): where people approved the same kind of payment for an agent
   * at least `minApprovals` times, the rule that would have allowed them outright. Reads only.
   */
  suggestions(wid: string, minApprovals?: number): Promise<Suggestion[]>;
  /** A page of approvals, oldest first; `onlyFor`: a member's view. Reads only. */
  list(wid: string, options: ListOptions): Promise<{ data: ApprovalView[]; next: string | null }>;
  /**
   * A person approves: recorded; short of a two-person count it waits for a second person; with
   * the last approval the action is checked afresh and allowed (with its receipt) or denied.
   * 403 forbidden / separation_of_duties / agent_stopped, 409 approval_closed /
   * second_person_required, 404 not_found.
   */
  approve(wid: string, aprId: string, who: Decider, note: string | null): Promise<ApproveOutcome>;
  /** A person denies: recorded, and the action is denied (`approval_denied`). 403, 404, 409 as for approve. */
  deny(wid: string, aprId: string, who: Decider, note: string | null): Promise<ApproveOutcome>;
}

export interface ApprovalsDeps {
  store: Store;
  clock: Clock;
  ledger: Ledger;
  /** The gate's contract: how a waiting action ends (denied, or allowed with its receipt). */
  actions: PendingActions;
  /** Applies a fleet freeze a person approved, inside the approval's write. */
  killSwitch: ApprovedFreezes;
}

export function createApprovals(deps: ApprovalsDeps): Approvals {
  const ctx = createContext(deps);
  return {
    openInWrite: (approval) => ctx.repo.open(approval),
    expireDue: () => expireDue(ctx),
    suggestions: (wid, minApprovals) => suggestRules(ctx.repo, wid, minApprovals),
    list: (wid, options) => listApprovals(ctx, wid, options),
    approve: createApprove(ctx),
    deny: createDeny(ctx),
  };
}
