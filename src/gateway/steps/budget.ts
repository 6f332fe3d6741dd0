import type { SyncStep } from './context.js';
import { priceOf } from './prices.js';

/**
 * 6. Budgets. The ladder's step on the most-used budget binding the key's traffic: block (429
 * budget_exhausted) and approval (402 approval_required) refuse; downgrade puts the cheapest
 * candidates first (enforcing only); nudge and downgrade carry x-svc-advisory, and one
 * `budget.advisory` event per budget, period and step. The reservation is taken later, by the
 * upstream step, in the same synchronous turn as this admission (see index.ts).
 */
export const budget: SyncStep = {
  name: 'budget',
  run(ctx, env) {
    const { budgets } = env;
    const admission = budgets.admit(ctx.key);
    ctx.admission = admission;
    if (admission.step === 'downgrade' && ctx.enforcement === 'enforce')
      ctx.candidates = [...ctx.candidates].sort((a, b) => priceOf(a) - priceOf(b));
    const advisory = budgets.advisory(admission);
    if (advisory) {
      ctx.headers['x-svc-advisory'] = advisory;
      const b = admission.binding!;
      env.advise?.(ctx.wid, 'budget.advisory', `${b.budget.id}/${b.periodStart}/${admission.step}`, {
        budgetId: b.budget.id,
        scope: budgets.scopeOf(b.budget),
        period: b.budget.period,
        periodStart: b.periodStart,
        step: admission.step,
        usedMicros: b.used,
        amountMicros: b.budget.amountMicros,
        message: advisory,
      });
    }
    if (admission.binding) ctx.headers['x-svc-budget-scope'] = budgets.scopeOf(admission.binding.budget);
  },
};
