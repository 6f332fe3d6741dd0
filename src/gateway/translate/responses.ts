import type { VendorJson as Json } from '../vendor-json.js';
import { safeJson } from './requests.js';

/**
 * Whole (non-streaming) answers from one vendor shape to the other, and the usage each reports.
 * Stop reasons map: end_turn/stop_sequence <-> stop, max_tokens <-> length, tool_use <->
 * tool_calls; a refusal becomes content_filter. The body's `model` is the catalogue id the
 * client sees, never the upstream's own name.
 */

/**
 * The tokens of one answer, however the vendor names them. `input` is every prompt token, those
 * read from and written to the vendor's prompt cache included (Anthropic and Bedrock report their
 * input without them, OpenAI and Gemini with them); `cacheRead` and `cacheWrite` are the part of
 * `input` the cache served or stored (`cacheWrite1h`: the part of `cacheWrite` kept one hour).
 * `reasoning` is the part of `output` spent thinking (billed as output by every vendor).
 */
export interface Usage {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
  cacheWrite1h?: number;
  reasoning?: number;
}

const count = (n: unknown): number => (typeof n === 'number' && Number.isFinite(n) && n > 0 ? Math.floor(n) : 0);

/** Only the parts that are not zero, so an answer without cache or reasoning has the usual two fields. */
const parts = (u: Usage): Usage => {
  const out: Usage = { input: u.input, output: u.output };
  for (const k of ['cacheRead', 'cacheWrite', 'cacheWrite1h', 'reasoning'] as const) if (u[k]) out[k] = u[k];
  return out;
};

/** OpenAI chat usage: prompt_tokens includes cached_tokens; completion_tokens includes reasoning_tokens. */
export const openaiUsage = (u: Json | null | undefined): Usage | null =>
  u && typeof u.prompt_tokens === 'number'
    ? parts({
        input: u.prompt_tokens,
        output: u.completion_tokens ?? 0,
        cacheRead: count(u.prompt_tokens_details?.cached_tokens),
        reasoning: count(u.completion_tokens_details?.reasoning_tokens),
      })
    : null;

/**
 * Anthropic usage: input_tokens excludes the cache's tokens (cache_read_input_tokens,
 * cache_creation_input_tokens, of which cache_creation.ephemeral_1h_input_tokens kept one hour).
 */
export const anthropicUsage = (u: Json | null | undefined): Usage | null => {
  if (!u || typeof u.input_tokens !== 'number') return null;
  const cacheRead = count(u.cache_read_input_tokens);
  const cacheWrite = count(u.cache_creation_input_tokens);
  return parts({
    input: u.input_tokens + cacheRead + cacheWrite,
    output: u.output_tokens ?? 0,
    cacheRead,
    cacheWrite,
    cacheWrite1h: Math.min(cacheWrite, count(u.cache_creation?.ephemeral_1h_input_tokens)),
  });
};

/** Responses API usage: input_tokens includes input_tokens_details.cached_tokens (OpenAI's rule). */
export const responsesApiUsage = (u: Json | null | undefined): Usage | null =>
  u && typeof u.input_tokens === 'number'
    ? parts({
        input: u.input_tokens,
        output: u.output_tokens ?? 0,
        cacheRead: count(u.input_tokens_details?.cached_tokens),
        reasoning: count(u.output_tokens_details?.reasoning_tokens),
      })
    : null;

/** Usage as an OpenAI chat client reads it: prompt_tokens counts the cache's tokens, cached_tokens those read. */
export function toOpenaiUsage(u: Usage): Json {
  return {
    prompt_tokens: u.input,
    completion_tokens: u.output,
    total_tokens: u.input + u.output,
    prompt_tokens_details: { cached_tokens: u.cacheRead ?? 0 },
    completion_tokens_details: { reasoning_tokens: u.reasoning ?? 0 },
  };
}

/** Usage as an Anthropic client reads it: input_tokens without the cache's tokens, which are named apart. */
export function toAnthropicUsage(u: Usage): Json {
  const cacheRead = u.cacheRead ?? 0;
  const cacheWrite = u.cacheWrite ?? 0;
  const oneHour = u.cacheWrite1h ?? 0;
  return {
    input_tokens: Math.max(0, u.input - cacheRead - cacheWrite),
    output_tokens: u.output,
    cache_creation_input_tokens: cacheWrite,
    cache_read_input_tokens: cacheRead,
    ...(cacheWrite > 0
      ? { cache_creation: { ephemeral_5m_input_tokens: cacheWrite - oneHour, ephemeral_1h_input_tokens: oneHour } }
      : {}),
  };
}

export const toOpenaiFinish = (stop: unknown): string | null => {
  switch (stop) {
    case 'end_turn':
    case 'stop_sequence':
    case 'pause_turn':
      return 'stop';
    case 'max_tokens':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    default:
      return stop === null || stop === undefined ? null : 'stop';
  }
};

export const toAnthropicStop = (finish: unknown): string | null => {
  switch (finish) {
    case 'stop':
      return 'end_turn';
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    default:
      return finish === null || finish === undefined ? null : 'end_turn';
  }
};

export function anthropicToOpenaiResponse(message: Json, model: string, nowSeconds: number): Json {
  const blocks = (Array.isArray(message.content) ? message.content : []) as Json[];
  const text = blocks
    .filter((b) => b.type === 'text')
    .map((b) => b.text)
    .join('');
  const calls = blocks
    .filter((b) => b.type === 'tool_use')
    .map((b) => ({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } }));
  const usage = anthropicUsage(message.usage) ?? { input: 0, output: 0 };
  return {
    id: `chatcmpl-${String(message.id ?? '').replace(/^msg_/, '')}`,
    object: 'chat.completion',
    created: nowSeconds,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text === '' && calls.length > 0 ? null : text,
          ...(calls.length > 0 ? { tool_calls: calls } : {}),
          refusal: null,
        },
        finish_reason: toOpenaiFinish(message.stop_reason),
        logprobs: null,
      },
    ],
    usage: toOpenaiUsage(usage),
  };
}

export function openaiToAnthropicResponse(completion: Json, model: string): Json {
  const choice = (completion.choices?.[0] ?? {}) as Json;
  const content: Json[] = [];
  const text = choice.message?.content;
  if (typeof text === 'string' && text !== '') content.push({ type: 'text', text });
  for (const call of (Array.isArray(choice.message?.tool_calls) ? choice.message.tool_calls : []) as Json[]) {
    content.push({
      type: 'tool_use',
      id: call.id,
      name: call.function?.name,
      input: safeJson(call.function?.arguments),
    });
  }
  const usage = openaiUsage(completion.usage) ?? { input: 0, output: 0 };
  return {
    id: `msg_${String(completion.id ?? '').replace(/^chatcmpl-/, '')}`,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: toAnthropicStop(choice.finish_reason),
    stop_sequence: null,
    usage: toAnthropicUsage(usage),
  };
}
