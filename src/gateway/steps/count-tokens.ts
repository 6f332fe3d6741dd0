import { AppError } from '../../errors/app-error.js';
import { countLocally } from '../count-tokens.js';
import { failover } from '../failover.js';
import { attemptCount } from '../forward.js';
import { vendorOf } from '../vendors/index.js';
import { loadTokenizer } from '../tokens.js';
import { overheadMicros, serveHeaders } from './call-record.js';
import type { AsyncStep } from './context.js';
import { attemptFor } from './upstream.js';

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
    const { headers } = ctx;
    headers['x-svc-enforcement'] = ctx.enforcement === 'shadow' ? 'shadow' : 'observe';
    serveHeaders(ctx, env, model);
    if (!ctx.steering.dryRun && vendorOf(provider.kind).countTokens && !env.health.open(model.id)) {
      // The routed model only, by the one failover rule (its deployments, a vendor's named wait).
      const asked = await failover(
        ctx,
        env,
        [model],
        (served) =>
          attemptCount(env.upstreamOf(served.provider), attemptFor(ctx, env, served, undefined), ctx.callId.slice(5)),
        async () => {},
      );
      const result = asked.kind === 'answered' ? asked.result : null;
      if (result?.kind === 'json') {
        headers['x-svc-token-count'] = 'vendor';
        headers['x-svc-overhead-micros'] = String(overheadMicros(ctx, result.upstreamMs));
        return { status: 200, headers, json: result.body };
      }
      if (result?.kind === 'refused') {
        throw new AppError('invalid_request', {
          message: `${model.id} refused the request (HTTP ${result.status}): ${String(result.body.error?.message ?? result.body.message ?? 'no reason given')}`,
          fix: "Correct the request as the vendor's message says.",
          headers,
          details: { upstreamStatus: result.status },
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
