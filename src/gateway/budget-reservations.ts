import type { Clock } from '../lib/clock.js';
import type { Store } from '../store/index.js';
import type { Binding, Reservation } from './budgets.js';
import type { CallLog } from './calls.js';
import type { GatewayRepo } from './repo.js';

/**
 * A request's stored reservations on its budgets (`budgetReservations` [wid, budId, period start,
 * resId]): what live ones add up to, and the handle that moves and settles one (budgets.ts says
 * the rules).
 */
export interface ReservationDeps {
  store: Store;
  clock: Clock;
  calls: Pick<CallLog, 'addSpend' | 'spent'>;
  repo: GatewayRepo;
  /** How long a reservation counts once taken or moved. */
  reservationMs: number;
}

/**
 * Micro-dollars reserved on a budget's period by live reservations. Inside a write (`prune`),
 * expired ones are removed as they are read.
 */
export async function reservedOn(
  repo: Pick<GatewayRepo, 'reservations' | 'removeReservation'>,
  at: { wid: string; budgetId: string; start: string; now: number },
  prune: boolean,
): Promise<number> {
  const { wid, budgetId, start, now } = at;
  let micros = 0;
  for (const { id, value } of await repo.reservations(wid, budgetId, start)) {
    if (value.expiresAtMs > now) micros += value.micros;
    else if (prune) await repo.removeReservation(wid, budgetId, start, id);
  }
  return micros;
}

/** The stored reservation `id` on every applicable budget: how to move and settle it. */
export function reservationOf(
  deps: ReservationDeps,
  wid: string,
  applicable: readonly Binding[],
  id: string,
): Reservation {
  const { store, clock, calls, repo, reservationMs } = deps;
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
}
