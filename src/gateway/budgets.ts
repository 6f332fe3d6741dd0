import { AppError } from '../errors/app-error.js';
import type { IdSource } from '../lib/ids.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { Ledger } from '../ledger/service.js';
import { periodStart } from '../mandates/index.js';
import type { GatewaySettings } from '../settings/schema.js';
import type { Store } from '../store/index.js';
import type { BudgetRecord } from './records.js';
import type { KeyRecord } from '../keys/records.js';
import type { CallLog } from './calls.js';
import { admit } from './budget-admit.js';
import { reservedOn } from './budget-reservations.js';
import { periodEnd, scopeFault, scopeId } from './budget-scopes.js';
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
 * The admission is budget-admit.ts, the stored reservations budget-reservations.ts, what a scope
 * binds and when a period ends budget-scopes.ts.
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

/** A budget with what its current period holds: spent (written and written behind) and reserved. */
export type BudgetUse = BudgetRecord & { spentMicros: number; reservedMicros: number; periodStart: string };

/** The console's view of a budget now. */
export type BudgetOverview = BudgetUse & {
  /** Spent plus reserved. */
  usedMicros: number;
  /** `usedMicros` over the amount. */
  share: number;
  /** The ladder's rung that share has reached (null below the first). */
  step: Step | null;
  periodEnd: string;
};

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

/**
 * Model budgets: their creation, what each has used, and the admission of a key's request with
 * its reservation. Reads and writes `budgets`, `budgetSpend` (also through the call log's
 * written-behind spend) and `budgetReservations`; reads keys, agents and members (a scope's
 * owner, the approval's owner); a creation appends a ledger record.
 */
export interface Budgets {
  /**
   * Creates a budget in workspace `wid` and its `budget.created` ledger record, in one write.
   * A scope that cannot bind there (another workspace's key or agent) is 400 invalid_budget
   * naming `scope.id`.
   */
  create(wid: string, input: BudgetInput, actor: string): Promise<BudgetRecord>;
  /** Every budget of the workspace with its current period's spend and live reservations. */
  list(wid: string): Promise<BudgetUse[]>;
  /**
   * The console's view of every budget now: what it has used (spent and reserved) of its period,
   * as a share, the ladder's rung that share has reached (null below the first), and when the
   * period ends.
   */
  overview(wid: string): Promise<BudgetOverview[]>;
  /**
   * The budgets binding this key's traffic now, and the ladder's step (block and approval throw).
   * With `reserve`, what it gives for the step (null: nothing) is reserved on every applicable
   * budget in the same store write as the reads of spend and reservations the step is decided
   * on, so racing requests of every process each see the others' reservations. A key no budget
   * binds costs no write. `beforeWrite` (what `reserve` needs that takes time, such as counting
   * the prompt) is awaited first, once a budget binds, outside the write.
   */
  admit(
    key: KeyRecord,
    reserve?: (step: Step | null) => number | null,
    beforeWrite?: () => Promise<unknown> | undefined,
  ): Promise<Admission & { reservation: Reservation | null }>;
  /** The x-svc-advisory text of a nudge or downgrade (null for any other step). */
  advisory(admission: Admission): string | null;
  /** `kind:id`, as the x-svc-budget-scope header names the budget's scope. */
  scopeOf(b: BudgetRecord): string;
}

export interface BudgetsDeps {
  store: Store;
  clock: Clock;
  ids: IdSource;
  ledger: Ledger;
  calls: CallLog;
  /** How long a reservation counts unsettled (`reservationMsOf` the settings). */
  reservationMs?: number;
}

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

export function createBudgets(deps: BudgetsDeps): Budgets {
  const { store, clock, ids, ledger, calls } = deps;
  const repo = gatewayRepo(store);
  const parts = { store, clock, ids, calls, repo, reservationMs: deps.reservationMs ?? DEFAULT_RESERVATION_MS };

  const list = async (wid: string): Promise<BudgetUse[]> => {
    const now = clock.now();
    return Promise.all(
      (await repo.budgets(wid)).map(async (b) => {
        const start = periodStart(b.period, now);
        const [spentMicros, reservedMicros] = await Promise.all([
          calls.spent(wid, b.id, start),
          reservedOn(repo, { wid, budgetId: b.id, start, now }, false),
        ]);
        return { ...b, periodStart: start, spentMicros, reservedMicros };
      }),
    );
  };

  return {
    async create(wid, input, actor) {
      return store.write(async () => {
        const fault = await scopeFault(repo, wid, input.scope);
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

    async overview(wid) {
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

    admit: (key, reserve, beforeWrite) => admit(parts, key, reserve, beforeWrite),

    advisory(admission) {
      if (!admission.binding || (admission.step !== 'nudge' && admission.step !== 'downgrade')) return null;
      const b = admission.binding;
      const pct = Math.round((b.used / b.budget.amountMicros) * 100);
      return `${pct}% of the ${b.budget.period} budget of ${scopeId(b.budget)} is used${admission.step === 'downgrade' ? '; cheaper models are chosen first' : ''}.`;
    },

    scopeOf: scopeId,
  };
}
