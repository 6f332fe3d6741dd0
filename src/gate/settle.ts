import { AppError } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import { formatMoney } from '../lib/money.js';
import type { Ledger } from '../ledger/service.js';
import type { Store } from '../store/index.js';
import type { ActionRecord } from './records.js';
import type { GateRepo } from './repo.js';
import type { SettleInput } from './schemas.js';
import type { GateCaller } from './service.js';
import { toActionView, type ActionView } from './view.js';

/**
 * Settling an allowed action (the gate's rules are listed in ./service.ts), in one store.write():
 *  1. `settleable`: the agent's own action, allowed and not yet settled (else 404, 409, 409).
 *  2. `amountFits`: an amount only for a payment, and never above what was authorized.
 *  3. `paidAmount`: what was paid (completed: the authorized amount unless told otherwise).
 *  4. `rechargePeriod`: the period usage counts what was paid (a receipt a merchant checked
 *     keeps its amount counting), and an unpaid receipt nobody checked is withdrawn.
 *  5. The `action.settled` ledger record, then the settled action.
 */
export interface SettleDeps {
  store: Store;
  clock: Clock;
  ledger: Ledger;
  repo: GateRepo;
}

export function createSettle(deps: SettleDeps) {
  return async function settle(c: GateCaller, id: string, input: SettleInput): Promise<ActionView> {
    return deps.store.write(async () => {
      const action = settleable(await deps.repo.action(c.workspaceId, id), c, id);
      amountFits(action, input);
      const now = deps.clock.now();
      const amount = paidAmount(action, input);
      await rechargePeriod(deps, action, input, amount, now);
      const settled: ActionRecord = {
        ...action,
        status: 'settled',
        settlement: { status: input.status, amount, at: isoAt(now) },
      };
      await deps.ledger.record({
        workspaceId: c.workspaceId,
        actor: `agent:${c.agentId}`,
        kind: 'action.settled',
        subject: id,
        data: { status: input.status, amount, authorizedAmount: action.payment?.amount ?? null },
      });
      await deps.repo.putAction(settled);
      return toActionView(settled);
    });
  };
}

/** Only the agent's own allowed, unsettled action can be settled; another's is not found. */
function settleable(action: ActionRecord | undefined, c: GateCaller, id: string): ActionRecord {
  if (!action || action.agentId !== c.agentId)
    throw new AppError('not_found', { message: 'No action with that id for this agent.' });
  if (action.status === 'settled')
    throw new AppError('already_settled', {
      message: `Action ${id} was already settled (${action.settlement!.status}).`,
    });
  if (action.status !== 'allowed')
    throw new AppError('not_allowed', {
      message: `Action ${id} was not allowed (status ${action.status}), so it cannot be settled.`,
    });
  return action;
}

/** An amount only for an action with a payment, and at most the authorized amount. */
function amountFits(action: ActionRecord, input: SettleInput): void {
  if (input.amount !== undefined && !action.payment) {
    throw new AppError('invalid_amount', {
      message: 'This action carries no payment, so its settlement takes no amount.',
      details: { errors: [{ field: 'amount', message: '"amount" is only for actions with a payment' }] },
    });
  }
  if (input.amount !== undefined && action.payment && input.amount > action.payment.amount) {
    throw new AppError('invalid_amount', {
      message: `The settled amount ${formatMoney(input.amount, action.payment.currency)} is above the ${formatMoney(action.payment.amount, action.payment.currency)} that was authorized.`,
      fix: 'Settle at most the authorized amount; ask again (authorize) for anything more.',
      details: {
        errors: [
          {
            field: 'amount',
            message: `"amount" must be at most ${action.payment.amount} (minor units: the authorized ${formatMoney(action.payment.amount, action.payment.currency)})`,
          },
        ],
      },
    });
  }
}

/**
 * Completed: what was paid (the authorized amount unless told otherwise). Failed or cancelled:
 * nothing was paid; an amount is recorded only if the agent names one.
 */
function paidAmount(action: ActionRecord, input: SettleInput): number | null {
  return input.status === 'completed' ? (input.amount ?? action.payment?.amount ?? null) : (input.amount ?? null);
}

/**
 * The period counts what was paid instead of what was authorized; nothing paid (failed,
 * cancelled, or completed with amount 0) withdraws the receipt. A receipt a merchant has checked
 * online may have been taken as payment: its amount keeps counting whatever the agent reports,
 * and it is never withdrawn after the fact.
 */
async function rechargePeriod(
  deps: SettleDeps,
  action: ActionRecord,
  input: SettleInput,
  amount: number | null,
  now: number,
): Promise<void> {
  const nothingPaid = input.status !== 'completed' || amount === 0;
  const seen = action.receipt !== null && (await deps.repo.receiptSeen(action.id));
  if (action.charge) {
    const paid = nothingPaid ? 0 : (amount ?? action.charge.amount);
    const kept = seen ? Math.max(paid, action.charge.amount) : paid;
    await deps.repo.add(action.workspaceId, action.agentId, action.charge, kept - action.charge.amount);
  }
  if (nothingPaid && action.receipt !== null && !seen) {
    await deps.repo.withdrawReceipt(action.id, {
      at: isoAt(now),
      reason: `the action was settled ${input.status}${input.status === 'completed' ? ' with amount 0' : ''}`,
    });
  }
}
