import { AppError } from '../errors/app-error.js';
import { isoAt } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import { metrics } from '../lib/metrics.js';
import { formatMicroDollars } from '../lib/money.js';
import { periodStart } from '../mandates/index.js';
import type { KeyRecord } from '../keys/records.js';
import type { Admission, Binding, Reservation, Step } from './budgets.js';
import type { BudgetRecord } from './records.js';
import { reservationOf, reservedOn, type ReservationDeps } from './budget-reservations.js';
import { applies, periodEnd, scopeId } from './budget-scopes.js';

/**
 * A key's budget admission (`Budgets.admit`), in order:
 * 1. the budgets that bind the key (none: no write at all);
 * 2. what the reservation needs that takes time (`beforeWrite`), outside the write;
 * 3. one store write (`decide`): each budget's spend and live reservations (expired ones
 *    removed), the most-used budget and its ladder's rung, and this request's reservation on
 *    every applicable budget;
 * 4. block and approval refuse (`refuse`), after the write (they reserved nothing).
 */
export interface AdmitDeps extends ReservationDeps {
  ids: IdSource;
}

const share = (b: Binding) => b.used / b.budget.amountMicros;

export async function admit(
  deps: AdmitDeps,
  key: KeyRecord,
  reserve?: (step: Step | null) => number | null,
  beforeWrite?: () => Promise<unknown> | undefined,
): Promise<Admission & { reservation: Reservation | null }> {
  const wid = key.workspaceId;
  const now = deps.clock.now();
  const budgets = (await deps.repo.budgets(wid)).filter((budget) => applies(budget, key));
  if (budgets.length === 0) return { step: null, binding: null, applicable: [], reservation: null };
  await beforeWrite?.();
  const { applicable, binding, step, id } = await deps.store.write(() => decide(deps, wid, budgets, now, reserve));
  if (step) metrics.budgetSteps.inc({ step });
  await refuse(deps, wid, binding, step, now);
  return { step, binding, applicable, reservation: id === null ? null : reservationOf(deps, wid, applicable, id) };
}

/**
 * Inside the admission's write: every applicable budget's use, the most-used one, its rung, and
 * the reservation (`reserve` gives its micro-dollars for the step; null, or a refusing step:
 * none).
 */
async function decide(
  deps: AdmitDeps,
  wid: string,
  budgets: readonly BudgetRecord[],
  now: number,
  reserve: ((step: Step | null) => number | null) | undefined,
): Promise<{ applicable: Binding[]; binding: Binding; step: Step | null; id: string | null }> {
  const { repo, calls } = deps;
  const applicable: Binding[] = await Promise.all(
    budgets.map(async (budget) => {
      const start = periodStart(budget.period, now);
      const [spent, reserved] = await Promise.all([
        calls.spent(wid, budget.id, start),
        reservedOn(repo, { wid, budgetId: budget.id, start, now }, true),
      ]);
      return { budget, periodStart: start, used: spent + reserved };
    }),
  );
  const binding = applicable.reduce((x, y) => (share(y) > share(x) ? y : x));
  const rung = [...binding.budget.ladder].reverse().find((r) => share(binding) >= r.at);
  const step = rung?.step ?? null;
  const micros = step === 'block' || step === 'approval' ? null : (reserve?.(step) ?? null);
  let id: string | null = null;
  if (micros !== null) {
    id = deps.ids.id('rsv');
    for (const b of applicable)
      await repo.putReservation(wid, b.budget.id, b.periodStart, id, {
        micros,
        expiresAtMs: now + deps.reservationMs,
      });
  }
  return { applicable, binding, step, id };
}

/** Block: 429 budget_exhausted until the period ends. Approval: 402 approval_required naming the owner. */
async function refuse(deps: AdmitDeps, wid: string, binding: Binding, step: Step | null, now: number): Promise<void> {
  if (step === 'block') {
    const retry = Math.max(1, Math.ceil((periodEnd(binding) - now) / 1000));
    throw new AppError('budget_exhausted', {
      message: `The ${binding.budget.period} budget of ${scopeId(binding.budget)} (${formatMicroDollars(binding.budget.amountMicros)}) is used up until ${isoAt(periodEnd(binding))}.`,
      headers: { 'retry-after': String(retry), 'x-svc-budget-scope': scopeId(binding.budget) },
      details: {
        budgetId: binding.budget.id,
        scope: binding.budget.scope,
        amountMicros: binding.budget.amountMicros,
        usedMicros: binding.used,
      },
    });
  }
  if (step === 'approval') {
    const owner = await deps.repo.ownerOf(wid);
    throw new AppError('approval_required', {
      message: `The ${binding.budget.period} budget of ${scopeId(binding.budget)} has reached its approval step (${Math.round(share(binding) * 100)}% used); ${owner ? `${owner.name} (${owner.email})` : 'the workspace owner'} must approve more spend.`,
      headers: { 'x-svc-budget-scope': scopeId(binding.budget) },
      details: { owner, budgetId: binding.budget.id, scope: binding.budget.scope },
    });
  }
}
