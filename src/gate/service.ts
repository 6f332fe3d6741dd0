import { AppError } from '../errors/app-error.js';
import type { Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import type { Ledger } from '../ledger/service.js';
import type { Receipts } from '../receipts/service.js';
import type { Store } from '../store/index.js';
import type { ApprovalOpener } from '../approvals/service.js';
import type { Ap2Presentations } from '../ap2/service.js';
import { createAuthorize } from './authorize.js';
import { gateRepo } from './repo.js';
import type { AuthorizeInput, SettleInput } from './schemas.js';
import { createSettle } from './settle.js';
import { toActionView, type ActionView } from './view.js';

export { IDEMPOTENCY_TTL_MS, toActionView, type ActionView } from './view.js';

/**
 * The action gate (docs/gate.md#the-gate).
 * Rules:
 * - One transaction per request holds the decision: the action, its idempotency record, its
 *   ledger record, the period usage and the receipt commit together, flushed before the
 *   answer. If any of it cannot be written the request fails: never an allow without its record.
 * - The agent's standing and mandate are read inside that transaction, from the store: a freeze
 *   written by another process applies to the very next request. A stopped agent gets a deny
 *   decision with signal `agent_frozen`, not an error.
 * - Writes serialise on the store's lock, so concurrent requests cannot together overrun a
 *   period limit, and racing retries with one idempotency key make one action.
 * - Same idempotency key and same request: the same action again, never a second decision.
 *   Same key, another request: 409 idempotency_conflict. Keys are kept 24 hours per agent.
 * - A review opens its approval through the approvals' contract, in the decision's transaction:
 *   an approval never exists without its action, nor its action without it.
 * - Only an allowed, unsettled action can be settled; a failed or cancelled settlement (or one
 *   completed with amount 0) releases its amount from the period and withdraws its receipt
 *   (online checks then answer `revoked`); a settled amount replaces the authorized one, and is
 *   never above it (more than was authorized needs a new authorization). Once a merchant has
 *   checked the receipt online, its amount keeps counting and the receipt stands.
 * - An action of another agent (or workspace) is not found.
 *
 * The operations, one file each: ./authorize.ts (the decision, step by step), ./settle.ts; an
 * action that waited for a person ends through ./pending.ts, the approvals' side.
 */
export interface GateCaller {
  workspaceId: string;
  agentId: string;
}

export interface AuthorizeOptions {
  /** The session the request belongs to, when the request itself names none (the MCP session). */
  sessionId?: string | undefined;
  /**
   * The asker must be answered now (a card network's authorization): a decision that would wait
   * for a person is a deny saying so, and no approval is opened that nobody's answer could still
   * reach.
   */
  cannotWait?: boolean;
  /**
   * The caller's own writes about this decision (an integration's stored answer), made inside the
   * decision's transaction, so both land with one flush or neither does; it is called for a
   * replayed request too. It may be async, and it may run MORE THAN ONCE (the store retries a
   * write that conflicted with another): it may only read and write the store and compute; any
   * outside effect (network, logs, metrics, events) belongs after `authorize`.
   */
  inWrite?: (action: ActionView, replayed: boolean) => void | Promise<void>;
}

/**
 * The gate: decides an agent's action requests, shows an agent its actions, and settles them.
 * Writes actions, idempotency keys, period usage, withdrawn receipts and ledger records (and
 * opens approvals through the approvals' contract); reads the agent's standing and mandate.
 */
export interface Gate {
  /**
   * Decides one action request in one transaction (allow, deny, or review: an approval opened
   * for people), with its ledger record and, for an allowed payment, its receipt. `replayed`: an
   * idempotent retry answered with the first action. Throws 409 idempotency_conflict for a key
   * first used by another request.
   */
  authorize(
    c: GateCaller,
    input: AuthorizeInput,
    options?: AuthorizeOptions,
  ): Promise<{ action: ActionView; replayed: boolean }>;
  /**
   * The agent's own action (404 for any other); a waiting approval past its time reads as the
   * deny the expiry sweep is about to write. Reads only.
   */
  get(c: GateCaller, id: string): Promise<ActionView>;
  /**
   * Settles the agent's allowed action (completed, failed or cancelled), with its
   * `action.settled` record; the period usage counts what was paid, and an unpaid receipt is
   * withdrawn unless a merchant has checked it.
   */
  settle(c: GateCaller, id: string, input: SettleInput): Promise<ActionView>;
}

export interface GateDeps {
  store: Store;
  clock: Clock;
  ids: IdSource;
  ledger: Ledger;
  receipts: Receipts;
  /** Opens the approval a review asks for, inside the decision's write. */
  approvals: ApprovalOpener;
  approvalTtlMs: number;
  /** Which currency a token of a 402 challenge counts in (setting gate.assetCurrencies). */
  assetCurrencies?: Readonly<Record<string, string>>;
  /** Verifies a presented AP2 closed mandate and keeps its nonce (docs/ap2.md); absent: `ap2` is refused. */
  ap2?: Ap2Presentations;
}

export function createGate(deps: GateDeps): Gate {
  const repo = gateRepo(deps.store);
  return {
    authorize: createAuthorize({ ...deps, repo }),
    settle: createSettle({ ...deps, repo }),

    async get(c, id) {
      const action = await repo.action(c.workspaceId, id);
      if (!action || action.agentId !== c.agentId)
        throw new AppError('not_found', { message: 'No action with that id for this agent.' });
      const approval =
        action.status === 'pending_approval' && action.approvalId
          ? await repo.approval(c.workspaceId, action.approvalId)
          : undefined;
      if (approval && approval.status === 'pending' && Date.parse(approval.expiresAt) <= deps.clock.now()) {
        return toActionView({
          ...action,
          decision: 'deny',
          status: 'denied',
          signals: ['approval_expired'],
          reason: `Nobody decided approval ${approval.id} before ${approval.expiresAt}.`,
        });
      }
      return toActionView(action);
    },
  };
}
