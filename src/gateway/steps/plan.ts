import { AppError } from '../../errors/app-error.js';
import { isoAt } from '../../lib/clock.js';
import { gatewayRepo } from '../repo.js';
import type { AsyncStep, GatewayAllowances, GatewayContext, GatewayEnv } from './context.js';

/**
 * Plan. The free plan's people limit: a workspace past it keeps its model traffic for the
 * grace period, counted from when it was first seen past it; then 402 seat_limit_reached. Back
 * within the limit, the count starts afresh; the mark is written beside the answer, not before
 * it. Then the monthly request allowance: 429 plan_limit_reached, retry-after until next month.
 */
async function checkSeats(ctx: GatewayContext, env: GatewayEnv): Promise<void> {
  const { store } = env;
  const { wid, nowMs } = ctx;
  const repo = gatewayRepo(store);
  const { people } = await allowancesOf(ctx, env);
  // The mark is written beside the answer (not awaited; a failure is retried by the next request).
  const forget = () => void store.write(() => repo.removeSeatOverage(wid)).catch(() => {});
  if (people === null) {
    if (await repo.hasSeatOverage(wid)) forget();
    return;
  }
  const [count, since] = await Promise.all([repo.memberCount(wid), repo.seatOverage(wid)]);
  if (count <= people) {
    if (since) forget();
    return;
  }
  if (!since) {
    void store
      .write(async () => {
        if (!(await repo.hasSeatOverage(wid))) await repo.putSeatOverage(wid, isoAt(nowMs));
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

/**
 * The month's allowance, read here so that a request past it is refused before the later checks;
 * the admit step counts the request, checking the allowance again in the same write (racing
 * requests cannot both take the last one).
 */
async function checkMonthlyRequests(ctx: GatewayContext, env: GatewayEnv): Promise<void> {
  const allowed = (await allowancesOf(ctx, env)).monthlyRequests;
  if (allowed === null || (await env.calls.requestsThisMonth(ctx.wid, ctx.at)) < allowed) return;
  throw monthUsed(allowed, ctx.nowMs);
}

const allowances = new WeakMap<GatewayContext, Promise<GatewayAllowances>>();

/**
 * The plan's allowances, read from the store once per request (a read scans the workspace's
 * subscriptions): the plan step checks the people and the month's requests, and the admit step
 * counts against the month's allowance.
 */
export function allowancesOf(ctx: GatewayContext, env: GatewayEnv): Promise<GatewayAllowances> {
  let allowed = allowances.get(ctx);
  if (!allowed) allowances.set(ctx, (allowed = Promise.resolve(env.allowances(ctx.wid))));
  return allowed;
}

/** 429 plan_limit_reached: this month's requests are used; retry-after until next month. */
export function monthUsed(allowed: number, nowMs: number): AppError {
  const now = new Date(nowMs);
  const nextMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  return new AppError('plan_limit_reached', {
    variant: 'monthlyRequests',
    message: `The plan allows ${allowed} model requests a month, and this month's are used.`,
    fix: 'Wait for next month, or raise plan.monthlyRequests in the configuration.',
    headers: { 'retry-after': String(Math.ceil((nextMonth - nowMs) / 1000)) },
  });
}

export const plan: AsyncStep = {
  name: 'plan',
  async run(ctx, env) {
    await checkSeats(ctx, env);
    await checkMonthlyRequests(ctx, env);
  },
};
