import type { VendorJson as Json } from '../vendor-json.js';
import { anthropicExtrasForOpenai, openaiExtrasForAnthropic, withParallel } from './carry.js';

/**
 * Request bodies from one vendor shape to the other (OpenAI chat completions <-> Anthropic
 * messages). Rules:
 * - System and developer messages become Anthropic's `system`; Anthropic's `system` becomes the
 *   first OpenAI message, and an Anthropic `system` turn inside `messages` a system message in
 *   its place. Consecutive messages of one role are merged (Anthropic needs turns).
 * - Tool definitions, tool calls (assistant `tool_calls` <-> `tool_use` blocks) and tool results
 *   (`tool` messages <-> `tool_result` blocks) carry over with their ids.
 * - Images: data URLs <-> base64 sources, http(s) URLs <-> url sources.
 * - `max_tokens` is required by Anthropic: an OpenAI request without one gets DEFAULT_MAX_TOKENS.
 * - Sampling (`temperature`, `top_p`, stop sequences) and `stream` carry over; thinking, effort,
 *   the end user, parallel tool calls and the service tier as carry.ts says; what has no
 *   counterpart was refused by name before (carry.ts `uncarried`), never dropped here.
 * - Structured output: `response_format` json_schema <-> `output_config.format` json_schema
 *   (json_object as the schema of any object).
 * - A streaming request sent to an OpenAI-kind upstream always asks for usage, so that the call
 *   is accounted from the vendor's own counts.
 */

export const DEFAULT_MAX_TOKENS = 4096;

const textOf = (content: unknown): string => {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p: Json) => (typeof p?.text === 'string' ? p.text : '')).join('');
  return '';
};

/** Tool-call arguments as JSON; text that is not JSON is kept under `_raw` rather than lost. */
export const safeJson = (text: unknown): unknown => {
  if (typeof text !== 'string' || text === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    return { _raw: text };
  }
};

function toAnthropicBlocks(content: unknown): Json[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) return [];
  return content.flatMap((part: Json): Json[] => {
    if (part?.type === 'text') return [{ type: 'text', text: String(part.text ?? '') }];
    if (part?.type === 'image_url') {
      const url = String(part.image_url?.url ?? '');
      const data = /^data:([^;]+);base64,(.*)$/s.exec(url);
      return [
        data
          ? { type: 'image', source: { type: 'base64', media_type: data[1], data: data[2] } }
          : { type: 'image', source: { type: 'url', url } },
      ];
    }
    return [];
  });
}

function pushTurn(messages: Json[], role: 'user' | 'assistant', blocks: Json[]): void {
  if (blocks.length === 0) return;
  const last = messages[messages.length - 1];
  if (last && last.role === role) last.content.push(...blocks);
  else messages.push({ role, content: blocks });
}

const toAnthropicToolChoice = (choice: unknown): Json | undefined => {
  if (choice === 'auto') return { type: 'auto' };
  if (choice === 'required') return { type: 'any' };
  if (choice === 'none') return { type: 'none' };
  if (choice && typeof choice === 'object' && (choice as Json).function?.name)
    return { type: 'tool', name: (choice as Json).function.name };
  return undefined;
};

/** An OpenAI chat-completions body as an Anthropic messages body for `model`. */
export function openaiToAnthropicRequest(body: Json, model: string): Json {
  const system: string[] = [];
  const messages: Json[] = [];
  for (const m of body.messages as Json[]) {
    if (m.role === 'system' || m.role === 'developer') system.push(textOf(m.content));
    else if (m.role === 'user') pushTurn(messages, 'user', toAnthropicBlocks(m.content));
    else if (m.role === 'assistant') {
      const blocks = toAnthropicBlocks(m.content);
      for (const call of (Array.isArray(m.tool_calls) ? m.tool_calls : []) as Json[]) {
        blocks.push({
          type: 'tool_use',
          id: call.id,
          name: call.function?.name,
          input: safeJson(call.function?.arguments),
        });
      }
      pushTurn(messages, 'assistant', blocks);
    } else if (m.role === 'tool') {
      pushTurn(messages, 'user', [{ type: 'tool_result', tool_use_id: m.tool_call_id, content: textOf(m.content) }]);
    }
  }
  const out: Json = {
    model,
    max_tokens: body.max_completion_tokens ?? body.max_tokens ?? DEFAULT_MAX_TOKENS,
    messages,
  };
  if (system.length > 0) out.system = system.join('\n\n');
  if (typeof body.temperature === 'number') out.temperature = Math.min(1, Math.max(0, body.temperature));
  if (typeof body.top_p === 'number') out.top_p = body.top_p;
  if (body.stop !== undefined && body.stop !== null)
    out.stop_sequences = Array.isArray(body.stop) ? body.stop : [body.stop];
  if (body.stream === true) out.stream = true;
  const format = body.response_format;
  if (format?.type === 'json_schema' && format.json_schema?.schema)
    out.output_config = { format: { type: 'json_schema', schema: format.json_schema.schema } };
  else if (format?.type === 'json_object')
    out.output_config = { format: { type: 'json_schema', schema: { type: 'object' } } };
  Object.assign(out, openaiExtrasForAnthropic(body, out.max_tokens as number));
  if (Array.isArray(body.tools) && body.tools.length > 0) {
    out.tools = body.tools.map((t: Json) => ({
      name: t.function?.name,
      ...(t.function?.description ? { description: t.function.description } : {}),
      input_schema: t.function?.parameters ?? { type: 'object', properties: {} },
    }));
    const choice = withParallel(toAnthropicToolChoice(body.tool_choice), body);
    if (choice) out.tool_choice = choice;
  }
  return out;
}

const toOpenaiToolChoice = (choice: Json | undefined): unknown => {
  switch (choice?.type) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      return { type: 'function', function: { name: choice.name } };
    default:
      return undefined;
  }
};

function toOpenaiParts(blocks: Json[]): Json[] {
  return blocks.flatMap((b): Json[] => {
    if (b.type === 'text') return [{ type: 'text', text: String(b.text ?? '') }];
    if (b.type === 'image') {
      const url =
        b.source?.type === 'base64'
          ? `data:${b.source.media_type};base64,${b.source.data}`
          : String(b.source?.url ?? '');
      return [{ type: 'image_url', image_url: { url } }];
    }
    return [];
  });
}

/** An Anthropic messages body as an OpenAI chat-completions body for `model`. */
export function anthropicToOpenaiRequest(body: Json, model: string): Json {
  const messages: Json[] = [];
  if (body.system !== undefined) messages.push({ role: 'system', content: textOf(body.system) });
  for (const m of body.messages as Json[]) {
    // A system turn mid-conversation stays where it is: chat completions takes one anywhere.
    if (m.role === 'system') {
      messages.push({ role: 'system', content: textOf(m.content) });
      continue;
    }
    if (typeof m.content === 'string') {
      messages.push({ role: m.role, content: m.content });
      continue;
    }
    const blocks = (m.content ?? []) as Json[];
    if (m.role === 'assistant') {
      const text = blocks
        .filter((b) => b.type === 'text')
        .map((b) => b.text)
        .join('');
      const calls = blocks
        .filter((b) => b.type === 'tool_use')
        .map((b) => ({
          id: b.id,
          type: 'function',
          function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) },
        }));
      messages.push({
        role: 'assistant',
        content: text === '' && calls.length > 0 ? null : text,
        ...(calls.length > 0 ? { tool_calls: calls } : {}),
      });
      continue;
    }
    for (const b of blocks)
      if (b.type === 'tool_result')
        messages.push({ role: 'tool', tool_call_id: b.tool_use_id, content: textOf(b.content) });
    const parts = toOpenaiParts(blocks);
    if (parts.length > 0)
      messages.push({
        role: 'user',
        content: parts.every((p) => p.type === 'text') ? parts.map((p) => p.text).join('') : parts,
      });
  }
  const out: Json = { model, messages, max_tokens: body.max_tokens };
  if (typeof body.temperature === 'number') out.temperature = body.temperature;
  if (typeof body.top_p === 'number') out.top_p = body.top_p;
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0) out.stop = body.stop_sequences;
  if (body.stream === true) {
    out.stream = true;
    out.stream_options = { include_usage: true };
  }
  const format = body.output_config?.format ?? body.output_format;
  if (format?.type === 'json_schema' && format.schema)
    out.response_format = { type: 'json_schema', json_schema: { name: 'output', schema: format.schema } };
  Object.assign(out, anthropicExtrasForOpenai(body, model));
  if (Array.isArray(body.tools) && body.tools.length > 0) {
    out.tools = body.tools.map((t: Json) => ({
      type: 'function',
      function: {
        name: t.name,
        ...(t.description ? { description: t.description } : {}),
        parameters: t.input_schema ?? { type: 'object', properties: {} },
      },
    }));
    const choice = toOpenaiToolChoice(body.tool_choice);
    if (choice !== undefined) out.tool_choice = choice;
  }
  return out;
}
