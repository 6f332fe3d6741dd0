import type { GatewayModel } from '../../settings/schema.js';
import { DEFAULT_MAX_TOKENS } from '../translate/requests.js';
import type { Usage } from '../translate/responses.js';

/** A model's prices applied: what a call cost, what a request may cost, and a model's price for ordering. */
type Json = Record<string, unknown>;

export const costOf = (m: GatewayModel, u: Usage | null): number =>
  u ? Math.ceil((u.input * m.priceMicrosPerMTokIn + u.output * m.priceMicrosPerMTokOut) / 1_000_000) : 0;

/** The prompt at four characters a token, and the answer at its max tokens. */
export const estimateOf = (m: GatewayModel, promptChars: number, maxTokens: number): number =>
  Math.ceil((Math.ceil(promptChars / 4) * m.priceMicrosPerMTokIn + maxTokens * m.priceMicrosPerMTokOut) / 1_000_000);

export const priceOf = (m: GatewayModel): number => m.priceMicrosPerMTokIn + m.priceMicrosPerMTokOut;

/** The request's max tokens, or what is sent upstream when it names none. */
export const maxTokensOf = (body: Json): number =>
  Number(body.max_completion_tokens ?? body.max_tokens ?? DEFAULT_MAX_TOKENS);
