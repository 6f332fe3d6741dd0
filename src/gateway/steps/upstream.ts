import type { GatewayModel } from '../../settings/schema.js';
import { observeAttempt } from '../attempt-telemetry.js';
import { tryDeployments } from '../deployments.js';
import { attemptEmbeddings } from '../embeddings.js';
import { attempt, type AttemptResult } from '../forward.js';
import { answerScreen } from '../response-screen.js';
import { attemptResponses } from '../responses/attempt.js';
import type { AsyncStep } from './context.js';
import { estimateFor } from './prices.js';

/** A header's value, its repeats joined by commas (as HTTP reads a list). */
const headerValue = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v.join(',') : v);

/**
 * 9. Upstream: the only step that sends. What the request may cost was reserved on its budgets
 * by the budget step's admission; the candidates with a deployment whose circuit is
 * closed are tried in order, each in its vendor's shape (forward.ts translates both ways;
 * Responses and embeddings requests go by responses/attempt.ts and embeddings.ts): a model's
 * deployments first (deployments.ts: weights, retry-after), then the next model, until one
 * answers; the reservation follows the model tried. A stream is committed at
 * its first event and never failed over after it. The outcome is left for the accounting step;
 * if an attempt throws, the reservation is released.
 */
export const upstream: AsyncStep = {
  name: 'upstream',
  async run(ctx, env) {
    const { req, body, candidates } = ctx;
    const reservation = ctx.reservation;
    const attempted = ctx.attempted;
    const send = async (served: GatewayModel): Promise<AttemptResult> => {
      const provider = env.providers.get(served.provider)!;
      return observeAttempt(served, provider, body, (traceparent) =>
        (req.shape === 'responses' ? attemptResponses : req.shape === 'embeddings' ? attemptEmbeddings : attempt)(
          env.upstreamOf(provider.id),
          {
            shape: req.shape === 'anthropic' ? 'anthropic' : 'openai',
            body,
            stream: body.stream === true,
            model: served,
            provider,
            clientModel: ctx.enforcement === 'shadow' ? ctx.requested! : served.id,
            traceparent: traceparent ?? req.traceparent,
            anthropicVersion:
              typeof req.headers['anthropic-version'] === 'string' ? req.headers['anthropic-version'] : undefined,
            anthropicBeta: headerValue(req.headers['anthropic-beta']),
            signal: req.signal,
            nowSeconds: Math.floor(ctx.nowMs / 1000),
            // Chat and Responses answers (a Responses stream is screened in its own shape, by
            // responses/attempt.ts); embeddings answers are vectors, with no text to screen.
            screen: req.shape === 'embeddings' ? undefined : answerScreen(ctx, env),
          },
          ctx.callId.slice(5),
        ),
      );
    };
    try {
      for (const { model, deployments } of env.health.plan(candidates, ctx.profile)) {
        if (attempted.length > 0 && reservation) await reservation.change(estimateFor(ctx, model));
        attempted.push(model.id);
        const answered = await tryDeployments(ctx, env, model, deployments, send);
        if (answered === 'aborted') break;
        if (answered) {
          ctx.outcome = answered;
          return;
        }
      }
    } catch (err) {
      await reservation?.settle(0);
      throw err;
    }
    ctx.outcome = { kind: 'exhausted' };
  },
};
