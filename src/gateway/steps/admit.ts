import type { AsyncStep } from './context.js';
import { allowancesOf, monthUsed } from './plan.js';

/**
 * Admitted: every check passed. The headers that say how the request is served are set
 * (x-svc-enforcement: shadow, downgrade, nudge or observe; x-svc-would-route-to in shadow mode;
 * x-svc-redacted), the request counts against the month's allowance (before it is answered; the
 * allowance is checked again in the same write as the count, so racing requests of any process
 * cannot both take the last one: 429 plan_limit_reached), and its task exists from now on.
 */
export const admit: AsyncStep = {
  name: 'admit',
  async run(ctx, env) {
    const { headers, admission } = ctx;
    headers['x-svc-enforcement'] =
      ctx.enforcement === 'shadow'
        ? 'shadow'
        : admission.step === 'downgrade' || admission.step === 'nudge'
          ? admission.step
          : 'observe';
    if (ctx.enforcement === 'shadow') headers['x-svc-would-route-to'] = ctx.wouldRouteTo ?? 'none';
    if (Object.keys(ctx.redacted).length > 0)
      headers['x-svc-redacted'] = Object.entries(ctx.redacted)
        .map(([k, n]) => `${k}=${n}`)
        .join(', ');
    // The allowance the plan step read for this request (the count itself is checked in its write).
    const allowed = (await allowancesOf(ctx, env)).monthlyRequests;
    if (!(await env.calls.countRequest(ctx.wid, ctx.at, allowed))) throw monthUsed(allowed!, ctx.nowMs);
    env.calls.openTask(ctx.wid, ctx.taskId, ctx.at);
  },
};
