import { AppError } from '../errors/app-error.js';
import type { IdSource } from '../lib/ids.js';
import { metrics } from '../lib/metrics.js';
import { formatMicroDollars } from '../lib/money.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { Ledger } from '../ledger/service.js';
import { periodStart } from '../mandates/index.js';
import type { GatewaySettings } from '../settings/schema.js';
import type { Store } from '../store/index.js';
import type { BudgetRecord } from './records.js';
import type { KeyRecord } from '../keys/records.js';
import type { CallLog } from './calls.js';
import { gatewayRepo } from './repo.js';

/**
 * Model budgets (docs/gateway.md; issue 6).
 * Rules:
 * - A budget binds the traffic of its scope: the whole workspace, a team or principal (the key's),
 *   one key, or one agent (an agent key's). Spend is micro-dollars per UTC day, week (from
 *   Monday) or month.
 * - What a request may cost is reserved when it is admitted (its prompt's tokens, counted with
 *   the tokenizer of tokens.ts, and its max tokens, at the price of the model about to serve it).
 *   Reservations are stored (`budgetReservations`), not held by a process: `admit` reads, in one
 *   store write, each applicable budget's spend and every live reservation of its period, decides
 *   the step, and puts this request's reservation. Racing requests of every process (`--workers`,
 *   instances sharing PostgreSQL) conflict and one retries, so each sees the others' reservations
 *   and a budget is overrun by at most one request's reservation.
 * - The reservation moves with a fallback to another model (one write). When the call ends it is
 *   settled in one write that removes it and adds the vendor's cost to the spend, so what a call
 *   may cost is never out of sight in between. A cache hit, a later refusal or a failure releases
 *   it (settles at zero). A settle runs once; a failed settle leaves the reservation to expire and
 *   adds the cost written behind (calls.ts `addSpend`, retried).
 * - A reservation expires `reservationMs` after it was taken or moved (a crashed process's stop
 *   counting); an expired one is removed by the next admission that reads it.
 * - The ladder's step is the highest rung at or below the share used (spent plus reserved, before
 *   this request) of the budget that is most used: nudge (x-svc-advisory), downgrade (cheapest
 *   eligible model first), approval (402 approval_required naming the workspace's owner), block
 *   (429 budget_exhausted, retry-after until the period ends).
 * - A budget binds within its workspace: a workspace scope names it, a key or agent scope one of
 *   its own keys or agents (else 400 invalid_budget naming scope.id).
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

/** Margin on a reservation's life past what a call's upstream timeouts allow. */
const RESERVATION_MARGIN_MS = 60_000;

/**
 * How long a reservation counts without being settled: a call's upstream timeouts, twice (a
 * failover), its retry deadline, and a margin. A stream that runs longer keeps going; only its
 * reservation stops counting before its cost is added.
 */
export const reservationMsOf = (
  g: Pick<GatewaySettings, 'connectTimeoutMs' | 'headersTimeoutMs' | 'bodyTimeoutMs' | 'retry'>,
): number =>
  2 * (g.connectTimeoutMs + g.headersTimeoutMs + g.bodyTimeoutMs) + g.retry.deadlineMs + RESERVATION_MARGIN_MS;

/** Used when no settings say otherwise (the defaults' value, about five minutes). */
export const DEFAULT_RESERVATION_MS = 300_000;

export function createBudgets(deps: {
  store: Store;
  clock: Clock;
  ids: IdSource;
  ledger: Ledger;
  calls: CallLog;
  reservationMs?: number;
}) {
  const { store, clock, ids, ledger, calls } = deps;
  const repo = gatewayRepo(store);
  const reservationMs = deps.reservationMs ?? DEFAULT_RESERVATION_MS;

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

  /**
   * Why a scope cannot bind in workspace `wid`, or null: a workspace scope names this workspace,
   * a key or agent scope one of its keys or agents (another workspace's would never bind).
   */
  const scopeFault = async (wid: string, scope: BudgetRecord['scope']): Promise<string | null> => {
    switch (scope.kind) {
      case 'workspace':
        return scope.id === wid ? null : `"scope.id" must be this workspace's id (${wid})`;
      case 'key':
        return (await repo.hasKey(wid, scope.id)) ? null : '"scope.id" names no key of this workspace';
      case 'agent':
        return (await repo.hasAgent(wid, scope.id)) ? null : '"scope.id" names no agent of this workspace';
      case 'team':
      case 'principal':
        return null;
    }
  };

  const periodEnd = (b: Binding): number => {
    const start = Date.parse(`${b.periodStart}T00:00:00.000Z`);
    const d = new Date(start);
    if (b.budget.period === 'day') return start + 86_400_000;
    if (b.budget.period === 'week') return start + 7 * 86_400_000;
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  };

  /**
   * Micro-dollars reserved on a budget's period by live reservations. Inside a write (`prune`),
   * expired ones are removed as they are read.
   */
  const reservedOn = async (wid: string, budgetId: string, start: string, now: number, prune: boolean) => {
    let micros = 0;
    for (const { id, value } of await repo.reservations(wid, budgetId, start)) {
      if (value.expiresAtMs > now) micros += value.micros;
      else if (prune) await repo.removeReservation(wid, budgetId, start, id);
    }
    return micros;
  };

  const list = async (
    wid: string,
  ): Promise<Array<BudgetRecord & { spentMicros: number; reservedMicros: number; periodStart: string }>> => {
    const now = clock.now();
    return Promise.all(
      (await repo.budgets(wid)).map(async (b) => {
        const start = periodStart(b.period, now);
        const [spentMicros, reservedMicros] = await Promise.all([
          calls.spent(wid, b.id, start),
          reservedOn(wid, b.id, start, now, false),
        ]);
        return { ...b, periodStart: start, spentMicros, reservedMicros };
      }),
    );
  };

  /** The stored reservation `id` on every applicable budget: how to move and settle it. */
  const reservationOf = (wid: string, applicable: readonly Binding[], id: string): Reservation => {
    let settled = false;
    return {
      async change(micros: number): Promise<void> {
        if (settled) return;
        const expiresAtMs = clock.now() + reservationMs;
        await store.write(async () => {
          for (const b of applicable)
            await repo.putReservation(wid, b.budget.id, b.periodStart, id, { micros, expiresAtMs });
        });
      },
      async settle(costMicros: number): Promise<void> {
        if (settled) return;
        settled = true;
        const cost = Math.max(0, costMicros);
        try {
          await store.write(async () => {
            for (const b of applicable) {
              await repo.removeReservation(wid, b.budget.id, b.periodStart, id);
              if (cost > 0)
                await repo.putSpent(
                  wid,
                  b.budget.id,
                  b.periodStart,
                  (await repo.spent(wid, b.budget.id, b.periodStart)) + cost,
                );
            }
          });
        } catch {
          // The store refused the write: the reservation stays until it expires, and the cost is
          // written behind with the call records (retried until the store takes it).
          for (const b of applicable) calls.addSpend(wid, b.budget.id, b.periodStart, cost);
        }
      },
    };
  };

  return {
    async create(wid: string, input: BudgetInput, actor: string): Promise<BudgetRecord> {
      return store.write(async () => {
        const fault = await scopeFault(wid, input.scope);
        if (fault)
          throw new AppError('invalid_budget', { details: { errors: [{ field: 'scope.id', message: fault }] } });
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
     * budget in the same store write as the reads of spend and reservations the step is decided
     * on, so racing requests of every process each see the others' reservations. A key no budget
     * binds costs no write. `beforeWrite` (what `reserve` needs that takes time, such as counting
     * the prompt) is awaited first, once a budget binds, outside the write.
     */
    async admit(
      key: KeyRecord,
      reserve?: (step: Step | null) => number | null,
      beforeWrite?: () => Promise<unknown> | undefined,
    ): Promise<Admission & { reservation: Reservation | null }> {
      const wid = key.workspaceId;
      const now = clock.now();
      const budgets = (await repo.budgets(wid)).filter((budget) => applies(budget, key));
      if (budgets.length === 0) return { step: null, binding: null, applicable: [], reservation: null };
      await beforeWrite?.();
      const share = (b: Binding) => b.used / b.budget.amountMicros;
      const decided = await store.write(async () => {
        const applicable: Binding[] = await Promise.all(
          budgets.map(async (budget) => {
            const start = periodStart(budget.period, now);
            const [spent, reserved] = await Promise.all([
              calls.spent(wid, budget.id, start),
              reservedOn(wid, budget.id, start, now, true),
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
          id = ids.id('rsv');
          for (const b of applicable)
            await repo.putReservation(wid, b.budget.id, b.periodStart, id, {
              micros,
              expiresAtMs: now + reservationMs,
            });
        }
        return { applicable, binding, step, id };
      });
      const { applicable, binding, step, id } = decided;
      if (step) metrics.budgetSteps.inc({ step });
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
        const owner = await repo.ownerOf(wid);
        throw new AppError('approval_required', {
          message: `The ${binding.budget.period} budget of ${scopeId(binding.budget)} has reached its approval step (${Math.round(share(binding) * 100)}% used); ${owner ? `${owner.name} (${owner.email})` : 'the workspace owner'} must approve more spend.`,
          headers: { 'x-svc-budget-scope': scopeId(binding.budget) },
          details: { owner, budgetId: binding.budget.id, scope: binding.budget.scope },
        });
      }
      return { step, binding, applicable, reservation: id === null ? null : reservationOf(wid, applicable, id) };
    },

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
/** A request's stored reservation on its budgets. */
export interface Reservation {
  /** Moves the reservation to another model's estimate (a fallback); one store write. */
  change(micros: number): Promise<void>;
  /**
   * Removes the reservation and adds what the call cost to the spend, in one store write; once
   * (later calls do nothing). Never rejects: a failed write leaves the reservation to expire and
   * writes the cost behind.
   */
  settle(costMicros: number): Promise<void>;
}
