import { AppError } from '../errors/app-error.js';
import type { IdSource } from '../lib/ids.js';
import { metrics } from '../lib/metrics.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { Ledger } from '../ledger/service.js';
import { periodStart } from '../mandates/index.js';
import type { Store } from '../store/index.js';
import type { BudgetRecord } from './records.js';
import type { KeyRecord } from '../keys/records.js';
import type { CallLog } from './calls.js';
import { gatewayRepo } from './repo.js';

/**
 * Model budgets (API.md 6, issue 6).
 * Rules:
 * - A budget binds the traffic of its scope: the whole workspace, a team or principal (the key's),
 *   one key, or one agent (an agent key's). Spend is micro-dollars per UTC day, week (from
 *   Monday) or month.
 * - What a request may cost is reserved when it is admitted (its prompt's tokens, counted with
 *   the tokenizer of tokens.ts, and its max tokens, at the price of the model about to serve it); the
 *   reservation moves with a fallback to another model, and is replaced by the cost the vendor's
 *   usage gives once the call ends. Racing requests of one process each see the others' reservations
 *   (a reservation is taken by `admit` in the same synchronous turn as its check, after the
 *   store reads), so a budget is overrun by at most one request's reservation. Reservations are
 *   the process's own; what another process has spent is seen once its call is settled.
 * - Spend is added to the store when a call settles, written behind and read and added in one write
 *   function (calls.ts `addSpend`), so processes racing on one budget never lose each other's spend.
 * - The ladder's step is the highest rung at or below the share used (spent plus reserved, before
 *   this request) of the budget that is most used: nudge (x-svc-advisory), downgrade (cheapest
 *   eligible model first), approval (402 approval_required naming the workspace's owner), block
 *   (429 budget_exhausted, retry-after until the period ends).
 * - Creating a budget is a ledger record.
 */
export type Step = 'nudge' | 'downgrade' | 'approval' | 'block';

export type BudgetInput = Pick<BudgetRecord, 'scope' | 'amountMicros' | 'period' | 'ladder'>;

export interface Binding {
  budget: BudgetRecord;
  periodStart: string;
  used: number;
}

export interface Admission {
  step: Step | null;
  /** The most-used budget, which sets the step and the x-svc-budget-scope header. */
  binding: Binding | null;
  applicable: Binding[];
}

const scopeId = (b: BudgetRecord) => `${b.scope.kind}:${b.scope.id}`;

export function createBudgets(deps: { store: Store; clock: Clock; ids: IdSource; ledger: Ledger; calls: CallLog }) {
  const { store, clock, ids, ledger, calls } = deps;
  const repo = gatewayRepo(store);
  const reserved = new Map<string, number>();
  const slot = (b: Binding) => `${b.budget.workspaceId}\u0000${b.budget.id}\u0000${b.periodStart}`;

  const applies = (b: BudgetRecord, key: KeyRecord): boolean => {
    switch (b.scope.kind) {
      case 'workspace':
        return true;
      case 'team':
        return key.team === b.scope.id;
      case 'principal':
        return key.principal === b.scope.id;
      case 'key':
        return key.id === b.scope.id;
      case 'agent':
        return key.agentId === b.scope.id;
    }
  };

  const periodEnd = (b: Binding): number => {
    const start = Date.parse(`${b.periodStart}T00:00:00.000Z`);
    const d = new Date(start);
    if (b.budget.period === 'day') return start + 86_400_000;
    if (b.budget.period === 'week') return start + 7 * 86_400_000;
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  };

  const list = async (
    wid: string,
  ): Promise<Array<BudgetRecord & { spentMicros: number; reservedMicros: number; periodStart: string }>> => {
    const now = clock.now();
    return Promise.all(
      (await repo.budgets(wid)).map(async (b) => {
        const start = periodStart(b.period, now);
        return {
          ...b,
          periodStart: start,
          spentMicros: await calls.spent(wid, b.id, start),
          reservedMicros: reserved.get(`${wid}\u0000${b.id}\u0000${start}`) ?? 0,
        };
      }),
    );
  };

  /** Reserves micros on every applicable budget; returns how to move and release it. */
  const reserveOn = (applicable: readonly Binding[], micros: number): Reservation => {
    let held = 0;
    const move = (delta: number) => {
      for (const b of applicable) reserved.set(slot(b), (reserved.get(slot(b)) ?? 0) + delta);
    };
    const hold = (next: number) => {
      move(next - held);
      held = next;
    };
    hold(micros);
    return {
      /** Moves the reservation to another model's estimate (a fallback). */
      change: hold,
      /** Replaces the reservation by what the call cost. */
      settle(costMicros: number): void {
        hold(0);
        for (const b of applicable) {
          if ((reserved.get(slot(b)) ?? 0) <= 0) reserved.delete(slot(b));
          calls.addSpend(b.budget.workspaceId, b.budget.id, b.periodStart, costMicros);
        }
      },
    };
  };

  return {
    async create(wid: string, input: BudgetInput, actor: string): Promise<BudgetRecord> {
      return store.write(async () => {
        const budget: BudgetRecord = {
          id: ids.id('bud'),
          workspaceId: wid,
          ...input,
          createdAt: isoAt(clock.now()),
          createdBy: actor,
        };
        await repo.putBudget(budget);
        await ledger.record({
          workspaceId: wid,
          actor,
          kind: 'budget.created',
          subject: budget.id,
          data: {
            scope: budget.scope,
            amountMicros: budget.amountMicros,
            period: budget.period,
            ladder: budget.ladder,
          },
        });
        return budget;
      });
    },

    list,

    /**
     * The console's view of every budget now: what it has used (spent and reserved) of its period,
     * as a share, the ladder's rung that share has reached (null below the first), and when the
     * period ends.
     */
    async overview(wid: string) {
      return (await list(wid)).map((b) => {
        const usedMicros = b.spentMicros + b.reservedMicros;
        const share = b.amountMicros > 0 ? usedMicros / b.amountMicros : 0;
        const rung = [...b.ladder].sort((x, y) => x.at - y.at).findLast((r) => share >= r.at);
        const binding = { budget: b, periodStart: b.periodStart, used: usedMicros };
        return {
          ...b,
          usedMicros,
          share,
          step: rung?.step ?? null,
          periodEnd: isoAt(periodEnd(binding)),
        };
      });
    },

    /**
     * The budgets binding this key's traffic now, and the ladder's step (block and approval throw).
     * With `reserve`, what it gives for the step (null: nothing) is reserved on every applicable
     * budget in the same synchronous turn as the check, after the store reads, so racing requests
     * of this process each see the others' reservations.
     */
    async admit(
      key: KeyRecord,
      reserve?: (step: Step | null) => number | null,
    ): Promise<Admission & { reservation: Reservation | null }> {
      const now = clock.now();
      const spent = await Promise.all(
        (await repo.budgets(key.workspaceId))
          .filter((budget) => applies(budget, key))
          .map(async (budget) => {
            const start = periodStart(budget.period, now);
            return { budget, start, spent: await calls.spent(key.workspaceId, budget.id, start) };
          }),
      );
      // From here on nothing awaits until the reservation is taken.
      const applicable: Binding[] = spent.map(({ budget, start, spent: micros }) => {
        const b = { budget, periodStart: start, used: 0 };
        b.used = micros + (reserved.get(slot(b)) ?? 0);
        return b;
      });
      if (applicable.length === 0) return { step: null, binding: null, applicable, reservation: null };
      const share = (b: Binding) => b.used / b.budget.amountMicros;
      const binding = applicable.reduce((a, b) => (share(b) > share(a) ? b : a));
      const rung = [...binding.budget.ladder].reverse().find((r) => share(binding) >= r.at);
      const step = rung?.step ?? null;
      if (step) metrics.budgetSteps.inc({ step });
      if (step === 'block') {
        const retry = Math.max(1, Math.ceil((periodEnd(binding) - now) / 1000));
        throw new AppError('budget_exhausted', {
          message: `The ${binding.budget.period} budget of ${scopeId(binding.budget)} (${binding.budget.amountMicros} micro-dollars) is used up until ${isoAt(periodEnd(binding))}.`,
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
        const owner = await repo.ownerOf(key.workspaceId);
        throw new AppError('approval_required', {
          message: `The ${binding.budget.period} budget of ${scopeId(binding.budget)} has reached its approval step (${Math.round(share(binding) * 100)}% used); ${owner ? `${owner.name} (${owner.email})` : 'the workspace owner'} must approve more spend.`,
          headers: { 'x-svc-budget-scope': scopeId(binding.budget) },
          details: { owner, budgetId: binding.budget.id, scope: binding.budget.scope },
        });
      }
      const micros = reserve?.(step) ?? null;
      return { step, binding, applicable, reservation: micros === null ? null : reserveOn(applicable, micros) };
    },

    reserve: reserveOn,

    advisory(admission: Admission): string | null {
      if (!admission.binding || (admission.step !== 'nudge' && admission.step !== 'downgrade')) return null;
      const b = admission.binding;
      const pct = Math.round((b.used / b.budget.amountMicros) * 100);
      return `${pct}% of the ${b.budget.period} budget of ${scopeId(b.budget)} is used${admission.step === 'downgrade' ? '; cheaper models are chosen first' : ''}.`;
    },

    scopeOf: scopeId,
  };
}

export type Budgets = ReturnType<typeof createBudgets>;
export interface Reservation {
  /** Moves the reservation to another model's estimate (a fallback). */
  change(micros: number): void;
  /** Replaces the reservation by what the call cost (its spend is written behind: calls.ts). */
  settle(costMicros: number): void;
}
