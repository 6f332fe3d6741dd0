import type { GatewayModel } from '../../settings/schema.js';
import { countTokens, estimate, INLINE_CHARS } from '../tokens.js';
import { DEFAULT_MAX_TOKENS } from '../translate/requests.js';
import type { Usage } from '../translate/responses.js';
import type { GatewayContext, GatewayEnv } from './context.js';

/** A model's prices applied: what a call cost, what a request may cost, and a model's price for ordering. */
type Json = Record<string, unknown>;

/**
 * A model's per-million-token prices for its prompt cache. Unset, each is the most any vendor
 * charges against the input price, so spend is never under-counted: a read at the input price
 * (vendors charge 0.1x to 0.5x), a write at 1.25x and a one-hour write at 2x (Anthropic's, on
 * its own API and Bedrock; OpenAI and Gemini report no writes).
 */
export const cachePrices = (m: GatewayModel) => ({
  read: m.priceMicrosPerMTokCacheRead ?? m.priceMicrosPerMTokIn,
  write: m.priceMicrosPerMTokCacheWrite ?? m.priceMicrosPerMTokIn * 1.25,
  write1h: m.priceMicrosPerMTokCacheWrite1h ?? m.priceMicrosPerMTokIn * 2,
});

/**
 * What an answer cost: the prompt's uncached tokens at the input price, its cache reads and
 * writes at theirs, and the output (reasoning included) at the output price, rounded up once.
 */
export const costOf = (m: GatewayModel, u: Usage | null): number => {
  if (!u) return 0;
  const read = u.cacheRead ?? 0;
  const write = u.cacheWrite ?? 0;
  const write1h = Math.min(write, u.cacheWrite1h ?? 0);
  const uncached = Math.max(0, u.input - read - write);
  const p = cachePrices(m);
  return Math.ceil(
    (uncached * m.priceMicrosPerMTokIn +
      read * p.read +
      (write - write1h) * p.write +
      write1h * p.write1h +
      u.output * m.priceMicrosPerMTokOut) /
      1_000_000,
  );
};

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
