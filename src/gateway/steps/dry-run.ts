import { overheadMicros, recordCall, serveHeaders } from './call-record.js';
import type { AsyncStep } from './context.js';
import { countPrompt, estimateFor } from './prices.js';

/**
 * Dry run (x-svc-dry-run: true): answered here with the model that would serve, the candidates
 * and the estimated cost; nothing is sent, nothing is reserved, and the call is recorded as
 * `dry_run`.
 */
export const dryRun: AsyncStep = {
  name: 'dry-run',
  async run(ctx, env) {
    if (!ctx.steering.dryRun) return;
    await countPrompt(ctx, env);
    const first = ctx.candidates[0]!;
    serveHeaders(ctx, env, first);
    const estimate = estimateFor(ctx, first);
    ctx.headers['x-svc-overhead-micros'] = String(overheadMicros(ctx));
    recordCall(ctx, env, { model: first.id, provider: first.provider, outcome: 'dry_run' });
    return {
      status: 200,
      headers: ctx.headers,
      json: {
        object: 'svc.dry_run',
        model: first.id,
        taskClass: ctx.taskClass,
        enforcement: ctx.headers['x-svc-enforcement'],
        candidates: ctx.candidates.map((m) => m.id),
        estimatedCostMicros: estimate,
        budgetStep: ctx.admission.step,
      },
    };
  },
};
