import type { GatewayModel } from '../../settings/schema.js';
import { countTokens, estimate, INLINE_CHARS } from '../tokens.js';
import { DEFAULT_MAX_TOKENS } from '../translate/requests.js';
import type { Usage } from '../translate/responses.js';
import type { GatewayContext, GatewayEnv } from './context.js';

/** A model's prices applied: what a call cost, what a request may cost, and a model's price for ordering. */
type Json = Record<string, unknown>;

export const costOf = (m: GatewayModel, u: Usage | null): number =>
  u ? Math.ceil((u.input * m.priceMicrosPerMTokIn + u.output * m.priceMicrosPerMTokOut) / 1_000_000) : 0;

/** The prompt at its token count (tokens.ts), and the answer at its max tokens. */
export const estimateOf = (m: GatewayModel, promptTokens: number, maxTokens: number): number =>
  Math.ceil((promptTokens * m.priceMicrosPerMTokIn + maxTokens * m.priceMicrosPerMTokOut) / 1_000_000);

export const priceOf = (m: GatewayModel): number => m.priceMicrosPerMTokIn + m.priceMicrosPerMTokOut;

/**
 * The request's max tokens, or what is sent upstream when it names none (Responses:
 * max_output_tokens); an embedding answers no tokens.
 */
export const maxTokensOf = (body: Json, shape?: string): number =>
  shape === 'embeddings'
    ? 0
    : Number(body.max_completion_tokens ?? body.max_tokens ?? body.max_output_tokens ?? DEFAULT_MAX_TOKENS);

const counting = new WeakMap<GatewayContext, Promise<number>>();
const counted = new WeakMap<GatewayContext, number>();

/**
 * Counts the prompt's tokens, once per request (after data-loss redaction, when it is first
 * asked), without holding the event loop (tokens.ts). A step that estimates awaits it first.
 */
export function countPrompt(ctx: GatewayContext, env: GatewayEnv): Promise<number> {
  let n = counting.get(ctx);
  if (n === undefined) {
    n = env.tokens.count(ctx.prompt()).then((tokens) => {
      counted.set(ctx, tokens);
      return tokens;
    });
    counting.set(ctx, n);
  }
  return n;
}

/**
 * The prompt's tokens as countPrompt counted them; not counted yet (a step that did not await
 * it), a short prompt is counted on the spot and a long one estimated, never holding the loop.
 */
export function promptTokensOf(ctx: GatewayContext): number {
  const n = counted.get(ctx);
  if (n !== undefined) return n;
  const prompt = ctx.prompt();
  return prompt.length <= INLINE_CHARS ? countTokens(prompt) : estimate(prompt);
}

/** What this request may cost at model `m`. */
export const estimateFor = (ctx: GatewayContext, m: GatewayModel): number =>
  estimateOf(m, promptTokensOf(ctx), maxTokensOf(ctx.body, ctx.req.shape));
