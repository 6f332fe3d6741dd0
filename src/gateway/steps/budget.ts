import type { GatewayModel } from '../../settings/schema.js';
import type { AsyncStep } from './context.js';
import { countPrompt, estimateFor, priceOf } from './prices.js';

/** The first of the candidates once sorted cheapest first (a stable sort keeps the first of equals). */
const cheapest = (candidates: readonly GatewayModel[]): GatewayModel | undefined =>
  [...candidates].sort((a, b) => priceOf(a) - priceOf(b))[0];

/**
 * Budgets. The ladder's step on the most-used budget binding the key's traffic: block (429
 * budget_exhausted) and approval (402 approval_required) refuse; downgrade puts the cheapest
 * candidates first (enforcing only); nudge and downgrade carry x-svc-advisory, and one
 * `budget.advisory` event per budget, period and step. What the request may cost (its first
 * candidate's estimate, after a downgrade's reordering) is reserved by the admission itself, in
 * the same store write as its check (budgets.ts), so racing requests of every process each see the
 * others' reservations; none for a dry run. A later refusal or a cache hit releases it; the upstream step
 * moves it with a fallback and the accounting step settles it.
 */
export const budget: AsyncStep = {
  name: 'budget',
  async run(ctx, env) {
    const { budgets } = env;
    const downgrades = (step: string | null) => step === 'downgrade' && ctx.enforcement === 'enforce';
    const reserves = !ctx.steering.dryRun && ctx.candidates.length > 0;
    const { reservation, ...admission } = await budgets.admit(
      ctx.key,
      (step) => {
        const first = downgrades(step) ? cheapest(ctx.candidates) : ctx.candidates[0];
        return reserves && first ? estimateFor(ctx, first) : null;
      },
      // Counted before the admission's store write, and only when a budget binds the key.
      () => (reserves ? countPrompt(ctx, env) : undefined),
    );
    ctx.admission = admission;
    ctx.reservation = reservation;
    if (downgrades(admission.step)) ctx.candidates = [...ctx.candidates].sort((a, b) => priceOf(a) - priceOf(b));
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
