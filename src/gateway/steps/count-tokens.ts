import { AppError } from '../../errors/app-error.js';
import { askVendor, countLocally } from '../count-tokens.js';
import { loadTokenizer } from '../tokens.js';
import { overheadMicros, serveHeaders } from './call-record.js';
import type { AsyncStep } from './context.js';

/**
 * Token counting (POST /v1/messages/count_tokens): the answer, after the kill switch,
 * classification, routing and data-loss screening (count-tokens.ts says how it counts). A dry
 * run counts here without asking a vendor. x-svc-token-count says who counted: `vendor` or
 * `local`; x-svc-enforcement (observe or shadow: no budget step applies) and
 * x-svc-overhead-micros are set as on every answer.
 */
export const countTokensStep: AsyncStep = {
  name: 'count-tokens',
  async run(ctx, env) {
    const model = ctx.candidates[0]!;
    const provider = env.providers.get(model.provider)!;
    const { headers, req } = ctx;
    headers['x-svc-enforcement'] = ctx.enforcement === 'shadow' ? 'shadow' : 'observe';
    serveHeaders(ctx, env, model);
    if (!ctx.steering.dryRun && provider.kind === 'anthropic' && !env.health.open(model.id)) {
      const beta = req.headers['anthropic-beta'];
      const version = req.headers['anthropic-version'];
      const asked = await askVendor(
        env.upstreamOf(provider.id),
        provider,
        model,
        ctx.body,
        {
          anthropicVersion: typeof version === 'string' ? version : undefined,
          anthropicBeta: Array.isArray(beta) ? beta.join(',') : beta,
          traceparent: req.traceparent,
        },
        req.signal,
      );
      if (asked.kind === 'counted') {
        headers['x-svc-token-count'] = 'vendor';
        headers['x-svc-overhead-micros'] = String(overheadMicros(ctx, asked.upstreamMs));
        return { status: 200, headers, json: { input_tokens: asked.inputTokens } };
      }
      if (asked.kind === 'refused') {
        throw new AppError('invalid_request', {
          message: `${model.id} refused the request (HTTP ${asked.status}): ${String(asked.body.error?.message ?? asked.body.message ?? 'no reason given')}`,
          fix: "Correct the request as the vendor's message says.",
          headers,
          details: { upstreamStatus: asked.status },
        });
      }
    }
    await loadTokenizer();
    headers['x-svc-token-count'] = 'local';
    const input = await countLocally(ctx.body, env.tokens);
    headers['x-svc-overhead-micros'] = String(overheadMicros(ctx));
    return { status: 200, headers, json: { input_tokens: input } };
  },
};
