import { AppError } from '../../errors/app-error.js';
import { overheadMicros, recordCall, serveHeaders, tokenFields } from './call-record.js';
import { answerBlockedMessage, answerScreen, screenAnswer } from '../response-screen.js';
import type { AsyncStep } from './context.js';
import { costOf, countPrompt, estimateFor } from './prices.js';

/**
 * Accounting: the upstream step's outcome becomes the answer. The call's cost from the
 * vendor's usage settles the reservation (a stream when it ends: one that did not finish is
 * charged at least its estimate, never nothing), the cost and overhead headers are set, and the
 * call record is queued. A vendor's refusal of the request is 400 invalid_request with its
 * message; no model answering is 502 upstream_failure with attemptedModels, or 429
 * upstream_rate_limited when the vendors throttled (with `retry-after`: the shortest wait a vendor
 * named beyond the request's deadline). Each is recorded; the runner releases the reservation. The answer's text is screened for data loss (response-screen.ts):
 * redacted, or refused with 400 sensitive_data_blocked (`in: answer`), charged and recorded.
 */
export const account: AsyncStep = {
  name: 'account',
  async run(ctx, env) {
    const { headers, outcome, reservation, attempted } = ctx;
    if (outcome.kind === 'exhausted') {
      recordCall(ctx, env, {
        attemptedModels: attempted,
        outcome: ctx.req.signal.aborted ? 'cancelled' : 'upstream_failure',
      });
      if (attempted.length > 0 && (outcome.retryAfterMs !== undefined || outcome.throttled)) {
        // The vendors throttled: the client backs off as they asked (their wait, when one was named).
        if (outcome.retryAfterMs !== undefined)
          headers['retry-after'] = String(Math.max(1, Math.ceil(outcome.retryAfterMs / 1000)));
        throw new AppError('upstream_rate_limited', {
          message: `Every eligible model is throttling: ${attempted.join(', ')}.`,
          headers,
          details: {
            attemptedModels: attempted,
            ...(outcome.retryAfterMs !== undefined ? { retryAfterMs: outcome.retryAfterMs } : {}),
          },
        });
      }
      throw new AppError('upstream_failure', {
        message:
          attempted.length > 0
            ? `Every eligible model failed: ${attempted.join(', ')}.`
            : 'Every eligible model is failing (their circuits are open); none was tried.',
        headers,
        details: { attemptedModels: attempted },
      });
    }
    const { model, result } = outcome;
    // `model` is as its answering deployment served it: the record names that provider and upstream model.
    const served = {
      model: model.id,
      provider: model.provider,
      upstreamModel: model.upstreamModel,
      attemptedModels: attempted,
    };
    serveHeaders(ctx, env, model);
    if (result.kind === 'refused') {
      recordCall(ctx, env, { ...served, outcome: 'upstream_error' });
      throw new AppError('invalid_request', {
        message: `${model.id} refused the request (HTTP ${result.status}): ${String(result.body.error?.message ?? result.body.message ?? 'no reason given')}`,
        fix: "Correct the request as the vendor's message says.",
        headers,
        details: { upstreamStatus: result.status },
      });
    }
    if (result.kind === 'json') {
      const cost = costOf(model, result.usage);
      await reservation?.settle(cost);
      // Data loss on the way back: redacted in place, or refused (the vendor's answer is still paid for).
      const found = screenAnswer(ctx.req.shape, result.body, answerScreen(ctx, env) ?? 'off');
      const answerFindings = Object.keys(found).length > 0 ? { answerFindings: found } : {};
      if (answerFindings.answerFindings && answerScreen(ctx, env) === 'block') {
        recordCall(ctx, env, {
          ...served,
          ...tokenFields(result.usage),
          costMicros: cost,
          outcome: 'sensitive_data_blocked',
          ...answerFindings,
        });
        throw new AppError('sensitive_data_blocked', {
          message: answerBlockedMessage(found),
          fix: 'The model answered with sensitive data; ask for an answer without it.',
          headers,
          details: { findings: found, in: 'answer' },
        });
      }
      headers['x-svc-cost-micros'] = String(cost);
      const overhead = overheadMicros(ctx, result.upstreamMs);
      headers['x-svc-overhead-micros'] = String(overhead);
      recordCall(ctx, env, {
        ...served,
        ...tokenFields(result.usage),
        costMicros: cost,
        overheadMicros: overhead,
        ...answerFindings,
      });
      return { status: 200, headers, json: result.body };
    }
    const overhead = overheadMicros(ctx, result.upstreamFirstByteMs);
    headers['x-svc-overhead-micros'] = String(overhead);
    // The prompt is counted while the stream runs (off the loop, not before the first byte).
    const estimate = countPrompt(ctx, env).then(
      () => estimateFor(ctx, model),
      () => estimateFor(ctx, model),
    );
    void result.done.then(async ({ usage, outcome: ended, findings }) => {
      // A stream that did not finish (cut, or the client left) may never have reported its usage.
      const cost = ended === 'ok' ? costOf(model, usage) : Math.max(costOf(model, usage), await estimate);
      await reservation?.settle(cost);
      recordCall(ctx, env, {
        ...served,
        ...tokenFields(usage),
        costMicros: cost,
        overheadMicros: overhead,
        outcome: ended === 'blocked' ? 'sensitive_data_blocked' : ended,
        ...(findings && Object.keys(findings).length > 0 ? { answerFindings: findings } : {}),
        latencyMs: Math.round(performance.now() - ctx.req.startedAt),
      });
    });
    return { status: 200, headers, stream: result.stream };
  },
};
