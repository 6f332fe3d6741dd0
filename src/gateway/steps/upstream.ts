import type { GatewayModel } from '../../settings/schema.js';
import { observeAttempt } from '../attempt-telemetry.js';
import { failover, type Attempt } from '../failover.js';
import { attempt, attemptEmbeddings } from '../forward.js';
import { answerScreen } from '../response-screen.js';
import { attemptResponses } from '../responses/attempt.js';
import type { AsyncStep, GatewayContext, GatewayEnv } from './context.js';
import { estimateFor } from './prices.js';

/** A header's value, its repeats joined by commas (as HTTP reads a list). */
const headerValue = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v.join(',') : v);

/** The attempt at `served` (a model as one deployment serves it) for this request. */
export function attemptFor(
  ctx: GatewayContext,
  env: GatewayEnv,
  served: GatewayModel,
  traceparent: string | undefined,
): Attempt {
  const { req, body } = ctx;
  return {
    shape: req.shape === 'anthropic' || req.shape === 'count_tokens' ? 'anthropic' : 'openai',
    body,
    stream: body.stream === true,
    model: served,
    provider: env.providers.get(served.provider)!,
    clientModel: ctx.enforcement === 'shadow' ? ctx.requested! : served.id,
    traceparent: traceparent ?? req.traceparent,
    anthropicVersion:
      typeof req.headers['anthropic-version'] === 'string' ? req.headers['anthropic-version'] : undefined,
    anthropicBeta: headerValue(req.headers['anthropic-beta']),
    signal: req.signal,
    nowSeconds: Math.floor(ctx.nowMs / 1000),
    // Chat and Responses answers (a Responses stream is screened in its own shape, by
    // responses/attempt.ts); embeddings answers are vectors, with no text to screen.
    screen: req.shape === 'embeddings' || req.shape === 'count_tokens' ? undefined : answerScreen(ctx, env),
  };
}

/**
 * Upstream: the only step that sends. What the request may cost was reserved on its budgets
 * by the budget step's admission; the candidates are tried by the one failover rule
 * (failover.ts: deployments, waits, backoff, fallbacks), each attempt through its vendor's
 * adapter (forward.ts; Responses by responses/attempt.ts); the reservation follows the model
 * tried. A stream is committed at its first event and never failed over after it. The outcome is
 * left for the accounting step; a request that ends without a model's answer has its reservation
 * released by the runner (steps/index.ts), in one place.
 */
export const upstream: AsyncStep = {
  name: 'upstream',
  async run(ctx, env) {
    const { req, body } = ctx;
    const reservation = ctx.reservation;
    const route =
      req.shape === 'responses' ? attemptResponses : req.shape === 'embeddings' ? attemptEmbeddings : attempt;
    ctx.outcome = await failover(
      ctx,
      env,
      ctx.candidates,
      (served) =>
        observeAttempt(served, env.providers.get(served.provider)!, body, (traceparent) =>
          route(env.upstreamOf(served.provider), attemptFor(ctx, env, served, traceparent), ctx.callId.slice(5)),
        ),
      async (model) => {
        if (reservation) await reservation.change(estimateFor(ctx, model));
      },
    );
  },
};
