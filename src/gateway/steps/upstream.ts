import { observeAttempt } from '../attempt-telemetry.js';
import { attempt } from '../forward.js';
import { attemptEmbeddings } from '../embeddings.js';
import { attemptResponses } from '../responses/attempt.js';
import type { AsyncStep } from './context.js';
import { estimateFor } from './prices.js';

/**
 * 9. Upstream: the only step that sends. What the request may cost is reserved on its budgets
 * (before the first await: see index.ts), then the candidates whose circuits are closed are tried
 * in order, each in its vendor's shape (forward.ts translates both ways; Responses and embeddings
 * requests go by responses/attempt.ts and embeddings.ts), failing over on a
 * failure until one answers; the reservation follows the model tried. A stream is committed at
 * its first event and never failed over after it. The outcome is left for the accounting step;
 * if an attempt throws, the reservation is released.
 */
export const upstream: AsyncStep = {
  name: 'upstream',
  async run(ctx, env) {
    const { req, body, candidates } = ctx;
    const applicable = ctx.admission.applicable;
    const reservation =
      applicable.length > 0 ? env.budgets.reserve(applicable, estimateFor(ctx, candidates[0]!)) : null;
    ctx.reservation = reservation;
    const attempted = ctx.attempted;
    try {
      for (const model of env.health.admit(candidates)) {
        if (attempted.length > 0 && reservation) reservation.change(estimateFor(ctx, model));
        attempted.push(model.id);
        const provider = env.providers.get(model.provider)!;
        const started = performance.now();
        const result = await observeAttempt(model, provider, body, (traceparent) =>
          (req.shape === 'responses' ? attemptResponses : req.shape === 'embeddings' ? attemptEmbeddings : attempt)(
            env.upstreamOf(provider.id),
            {
              shape: req.shape === 'anthropic' ? 'anthropic' : 'openai',
              body,
              stream: body.stream === true,
              model,
              provider,
              clientModel: ctx.enforcement === 'shadow' ? ctx.requested! : model.id,
              traceparent: traceparent ?? req.traceparent,
              anthropicVersion:
                typeof req.headers['anthropic-version'] === 'string' ? req.headers['anthropic-version'] : undefined,
              signal: req.signal,
              nowSeconds: Math.floor(ctx.nowMs / 1000),
            },
            ctx.callId.slice(5),
          ),
        );
        if (result.kind === 'failed') {
          if (req.signal.aborted) break;
          env.health.failure(model.id);
          continue;
        }
        env.health.success(
          model.id,
          result.kind === 'json'
            ? result.upstreamMs
            : result.kind === 'stream'
              ? result.upstreamFirstByteMs
              : performance.now() - started,
        );
        ctx.outcome = { kind: 'answered', model, result };
        return;
      }
    } catch (err) {
      reservation?.settle(0);
      throw err;
    }
    ctx.outcome = { kind: 'exhausted' };
  },
};
