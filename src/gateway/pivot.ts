import type { Attempt, Shape } from './failover.js';
import { anthropicToOpenaiRequest, DEFAULT_MAX_TOKENS, openaiToAnthropicRequest } from './translate/requests.js';
import {
  anthropicToOpenaiResponse,
  anthropicUsage,
  openaiToAnthropicResponse,
  openaiUsage,
  type Usage,
} from './translate/responses.js';
import {
  anthropicPassThrough,
  anthropicToOpenaiStream,
  openaiPassThrough,
  openaiToAnthropicStream,
  type StreamTranslator,
} from './translate/streams.js';
import type { VendorJson as Json } from './vendor-json.js';

/**
 * The two shapes every vendor adapter is translated through (its `pivot`, vendors/vendor.ts):
 * the client's body put in a pivot shape, and a pivot-shaped answer or stream put back in the
 * client's shape (translate/ does each direction).
 */
export const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';

/** The client's body in `shape` (translated when the shapes differ), for the model's upstream name. */
export function bodyIn(shape: Shape, a: Attempt): Json {
  const upstreamModel = a.model.upstreamModel;
  if (shape === 'openai') {
    if (a.shape !== 'openai') return anthropicToOpenaiRequest(a.body, upstreamModel);
    const body: Json = { ...a.body, model: upstreamModel };
    // Always ask for usage: the call is accounted from the vendor's own counts.
    if (a.stream) body.stream_options = { ...(a.body.stream_options ?? {}), include_usage: true };
    // A bound on the answer, so that the budget's reservation bounds the call's cost.
    if (body.max_tokens == null && body.max_completion_tokens == null) body.max_tokens = DEFAULT_MAX_TOKENS;
    return body;
  }
  return a.shape === 'anthropic'
    ? { ...a.body, model: upstreamModel }
    : openaiToAnthropicRequest(a.body, upstreamModel);
}

/**
 * The stream translator from pivot events in `shape` to the client's shape. Same-shape events
 * pass through with `streamModel` (the model the events name) renamed to the client's model.
 */
export function translatorFor(shape: Shape, a: Attempt, id: string, streamModel: string): StreamTranslator {
  const clientWantsUsage = a.body.stream_options?.include_usage === true;
  if (a.shape === 'openai') {
    return shape === 'openai'
      ? openaiPassThrough({ upstreamModel: streamModel, clientModel: a.clientModel, clientWantsUsage })
      : anthropicToOpenaiStream({
          clientModel: a.clientModel,
          clientWantsUsage,
          id: `chatcmpl-${id}`,
          created: a.nowSeconds,
        });
  }
  return shape === 'anthropic'
    ? anthropicPassThrough({ upstreamModel: streamModel, clientModel: a.clientModel })
    : openaiToAnthropicStream({ clientModel: a.clientModel, id: `msg_${id}` });
}

/** A whole answer in `shape`, and its usage, in the client's shape (throws on a shape it cannot read). */
export function answerFrom(shape: Shape, body: Json, a: Attempt): { body: Json; usage: Usage | null } {
  if (shape === 'openai')
    return {
      usage: openaiUsage(body.usage),
      body: a.shape === 'openai' ? { ...body, model: a.clientModel } : openaiToAnthropicResponse(body, a.clientModel),
    };
  return {
    usage: anthropicUsage(body.usage),
    body:
      a.shape === 'anthropic'
        ? { ...body, model: a.clientModel }
        : anthropicToOpenaiResponse(body, a.clientModel, a.nowSeconds),
  };
}
