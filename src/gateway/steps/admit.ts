import type { SyncStep } from './context.js';

/**
 * 7. Admitted: every check passed. The headers that say how the request is served are set
 * (x-svc-enforcement: shadow, downgrade, nudge or observe; x-svc-would-route-to in shadow mode;
 * x-svc-redacted), the request counts against the month's allowance (before it is answered, so
 * racing requests see it), and its task exists from now on.
 */
export const admit: SyncStep = {
  name: 'admit',
  run(ctx, env) {
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
    env.calls.countRequest(ctx.wid, ctx.at);
    env.calls.openTask(ctx.wid, ctx.taskId, ctx.at);
  },
};
