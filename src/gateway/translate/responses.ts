import type { VendorJson as Json } from '../vendor-json.js';
import { safeJson } from './requests.js';

/**
 * Whole (non-streaming) answers from one vendor shape to the other, and the usage each reports.
 * Stop reasons map: end_turn/stop_sequence <-> stop, max_tokens <-> length, tool_use <->
 * tool_calls; a refusal becomes content_filter. The body's `model` is the catalogue id the
 * client sees, never the upstream's own name.
 */

export interface Usage {
  input: number;
  output: number;
}

export const openaiUsage = (u: Json | null | undefined): Usage | null =>
  u && typeof u.prompt_tokens === 'number' ? { input: u.prompt_tokens, output: u.completion_tokens ?? 0 } : null;

export const anthropicUsage = (u: Json | null | undefined): Usage | null =>
  u && typeof u.input_tokens === 'number' ? { input: u.input_tokens, output: u.output_tokens ?? 0 } : null;

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
    usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output },
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
    usage: { input_tokens: usage.input, output_tokens: usage.output },
  };
}
