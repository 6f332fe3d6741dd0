import type { AsyncStep } from './context.js';
import { countPrompt, maxTokensOf } from './prices.js';

/**
 * Limits: requests and tokens per minute on the key, its team, its principal and its policy
 * profile (limits.ts). Past one: 429 rate_limited with retry-after, nothing sent. Otherwise the
 * request and its estimated tokens count now (a dry run is checked, not counted), and every answer
 * from here on, refusals included, carries OpenAI's x-ratelimit-* headers. The call's record
 * replaces the estimate by the tokens used (call-record.ts); a refusal after this step releases it.
 */
export const limit: AsyncStep = {
  name: 'limit',
  async run(ctx, env) {
    const scopes = env.limits.scopesOf(ctx.key, ctx.profile);
    if (scopes.length === 0) return;
    const tokens = (await countPrompt(ctx, env)) + maxTokensOf(ctx.body, ctx.req.shape);
    const checked = await env.limits.check({
      wid: ctx.wid,
      scopes,
      nowMs: ctx.nowMs,
      tokens: Number.isFinite(tokens) ? Math.max(0, tokens) : 0,
      count: !ctx.steering.dryRun,
    });
    Object.assign(ctx.headers, checked.headers);
    ctx.limitHold = checked.hold;
  },
};
