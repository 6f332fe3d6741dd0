import { AppError } from '../../errors/app-error.js';
import { isoAt } from '../../lib/clock.js';
import type { GatewayEnv, SyncStep } from './context.js';

/**
 * 2. The plan. The free plan's people limit: a workspace past it keeps its model traffic for the
 * grace period, counted from when it was first seen past it; then 402 seat_limit_reached. Back
 * within the limit, the count starts afresh; the mark is written beside the answer, not before
 * it. Then the monthly request allowance: 429 plan_limit_reached, retry-after until next month.
 */
function checkSeats(env: GatewayEnv, wid: string, nowMs: number): void {
  const { store } = env;
  const people = env.seats.people(wid);
  if (people === null) {
    if (store.tables.seatOverage.has(wid)) void store.write(() => store.tables.seatOverage.remove(wid)).catch(() => {});
    return;
  }
  const over = store.tables.members.scan([wid]).length > people;
  const since = store.tables.seatOverage.get(wid);
  if (!over) {
    if (since) void store.write(() => store.tables.seatOverage.remove(wid)).catch(() => {});
    return;
  }
  if (!since) {
    void store
      .write(() => {
        if (!store.tables.seatOverage.has(wid)) store.tables.seatOverage.put(wid, isoAt(nowMs));
      })
      .catch(() => {});
    return;
  }
  const ends = Date.parse(since) + env.seats.graceDays * 86_400_000;
  if (nowMs >= ends) {
    throw new AppError('seat_limit_reached', {
      message: `The plan allows ${people} people in a workspace; this one has had more since ${since}, and the grace period ended ${isoAt(ends)}.`,
    });
  }
}

function checkMonthlyRequests(env: GatewayEnv, wid: string, nowMs: number, at: string): void {
  const allowed = env.monthlyRequests(wid);
  if (allowed === null || env.calls.requestsThisMonth(wid, at) < allowed) return;
  const now = new Date(nowMs);
  const nextMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  throw new AppError('plan_limit_reached', {
    variant: 'monthlyRequests',
    message: `The plan allows ${allowed} model requests a month, and this month's are used.`,
    fix: 'Wait for next month, or raise plan.monthlyRequests in the configuration.',
    headers: { 'retry-after': String(Math.ceil((nextMonth - nowMs) / 1000)) },
  });
}

export const plan: SyncStep = {
  name: 'plan',
  run(ctx, env) {
    checkSeats(env, ctx.wid, ctx.nowMs);
    checkMonthlyRequests(env, ctx.wid, ctx.nowMs, ctx.at);
  },
};
