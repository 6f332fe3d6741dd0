import type { GatewayModel } from '../../settings/schema.js';
import { countTokens } from '../tokens.js';
import { DEFAULT_MAX_TOKENS } from '../translate/requests.js';
import type { Usage } from '../translate/responses.js';
import type { GatewayContext } from './context.js';

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

const counted = new WeakMap<GatewayContext, number>();

/** The prompt's tokens, counted once per request (after data-loss redaction, when it is first asked). */
export function promptTokensOf(ctx: GatewayContext): number {
  let n = counted.get(ctx);
  if (n === undefined) counted.set(ctx, (n = countTokens(ctx.prompt())));
  return n;
}

/** What this request may cost at model `m`. */
export const estimateFor = (ctx: GatewayContext, m: GatewayModel): number =>
  estimateOf(m, promptTokensOf(ctx), maxTokensOf(ctx.body, ctx.req.shape));
