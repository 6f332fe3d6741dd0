import type { VendorJson as Json } from '../vendor-json.js';
import { sseData, sseEvent, type SseEvent } from '../sse.js';
import {
  anthropicUsage,
  openaiUsage,
  toAnthropicStop,
  toAnthropicUsage,
  toOpenaiFinish,
  toOpenaiUsage,
  type Usage,
} from './responses.js';

/**
 * Streams, event by event, from the upstream's shape to the client's. Each translator takes the
 * upstream's events and returns the bytes to send on; it keeps the usage the upstream reported
 * and whether the upstream said it finished (a stream that ends without that was cut).
 * - Same shape: events pass as received (only the upstream model name is replaced by the
 *   catalogue id); for OpenAI the usage chunk, always asked of the upstream, is dropped when the
 *   client did not ask for it.
 * - Across shapes: text deltas, tool calls (ids, names, argument pieces), stop reasons and usage
 *   are rebuilt in the other vendor's event sequence.
 */

export interface StreamTranslator {
  event(e: SseEvent): string;
  /** The bytes that close the client's stream once the upstream finished cleanly. */
  end(): string;
  readonly usage: Usage | null;
  readonly finished: boolean;
}

const parse = (data: string): Json | null => {
  try {
    return JSON.parse(data) as Json;
  } catch {
    return null;
  }
};

/**
 * An Anthropic stream's usage: message_start's, with each message_delta's fields over it (the
 * delta's counts are running totals; the cache's tokens may come in either).
 */
function anthropicStreamUsage() {
  let raw: Json | null = null;
  return {
    read(e: SseEvent, body: Json | null): void {
      const u = e.event === 'message_start' || body?.type === 'message_start' ? body?.message?.usage : body?.usage;
      if (u && typeof u === 'object') raw = { ...(raw ?? { input_tokens: 0 }), ...(u as Json) };
    },
    get usage(): Usage | null {
      return raw && anthropicUsage(raw);
    },
  };
}

const renamer = (upstreamModel: string, clientModel: string) => {
  if (upstreamModel === clientModel) return (raw: string) => raw;
  const from = `"model":${JSON.stringify(upstreamModel)}`;
  const to = `"model":${JSON.stringify(clientModel)}`;
  return (raw: string) => raw.replace(from, to);
};

/** The data of an Anthropic stream's message_start event: an empty assistant message of this id and model. */
export function messageStart(id: string, model: string): Json {
  return {
    type: 'message_start',
    message: {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 0, output_tokens: 0 },
    },
  };
}

export function openaiPassThrough(opts: {
  upstreamModel: string;
  clientModel: string;
  clientWantsUsage: boolean;
}): StreamTranslator {
  const rename = renamer(opts.upstreamModel, opts.clientModel);
  const state = { usage: null as Usage | null, finished: false };
  return {
    event(e) {
      if (e.data === '[DONE]') {
        state.finished = true;
        return e.raw;
      }
      // Only the usage chunk names usage with a value; parse just that one.
      if (e.data.includes('"usage":{')) {
        const chunk = parse(e.data);
        const usage = openaiUsage(chunk?.usage);
        if (usage) {
          state.usage = usage;
          if (!opts.clientWantsUsage && Array.isArray(chunk?.choices) && chunk.choices.length === 0) return '';
        }
      }
      return rename(e.raw);
    },
    end: () => '',
    get usage() {
      return state.usage;
    },
    get finished() {
      return state.finished;
    },
  };
}

export function anthropicPassThrough(opts: { upstreamModel: string; clientModel: string }): StreamTranslator {
  const rename = renamer(opts.upstreamModel, opts.clientModel);
  const state = { finished: false };
  const usage = anthropicStreamUsage();
  return {
    event(e) {
      if (e.event === 'message_start' || e.event === 'message_delta') {
        usage.read(e, parse(e.data));
      } else if (e.event === 'message_stop') {
        state.finished = true;
      }
      return e.event === 'message_start' ? rename(e.raw) : e.raw;
    },
    end: () => '',
    get usage() {
      return usage.usage;
    },
    get finished() {
      return state.finished;
    },
  };
}

/** Anthropic events from the upstream, OpenAI chunks to the client. */
export function anthropicToOpenaiStream(opts: {
  clientModel: string;
  clientWantsUsage: boolean;
  id: string;
  created: number;
}): StreamTranslator {
  const state = { finished: false, finish: null as string | null };
  const usage = anthropicStreamUsage();
  const toolIndex = new Map<number, number>();
  const chunk = (delta: Json, finish: string | null = null) =>
    sseData({
      id: opts.id,
      object: 'chat.completion.chunk',
      created: opts.created,
      model: opts.clientModel,
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
    });
  return {
    event(e) {
      const body = parse(e.data);
      if (!body) return '';
      switch (e.event ?? body.type) {
        case 'message_start':
          usage.read(e, body);
          return chunk({ role: 'assistant', content: '' });
        case 'content_block_start':
          if (body.content_block?.type === 'tool_use') {
            const index = toolIndex.size;
            toolIndex.set(body.index, index);
            return chunk({
              tool_calls: [
                {
                  index,
                  id: body.content_block.id,
                  type: 'function',
                  function: { name: body.content_block.name, arguments: '' },
                },
              ],
            });
          }
          return '';
        case 'content_block_delta':
          if (body.delta?.type === 'text_delta') return chunk({ content: body.delta.text });
          if (body.delta?.type === 'input_json_delta')
            return chunk({
              tool_calls: [{ index: toolIndex.get(body.index) ?? 0, function: { arguments: body.delta.partial_json } }],
            });
          return '';
        case 'message_delta':
          usage.read(e, body);
          state.finish = toOpenaiFinish(body.delta?.stop_reason);
          return chunk({}, state.finish ?? 'stop');
        case 'message_stop':
          state.finished = true;
          return '';
        default:
          return '';
      }
    },
    end() {
      const u = usage.usage;
      const last =
        opts.clientWantsUsage && u
          ? sseData({
              id: opts.id,
              object: 'chat.completion.chunk',
              created: opts.created,
              model: opts.clientModel,
              choices: [],
              usage: toOpenaiUsage(u),
            })
          : '';
      return `${last}data: [DONE]\n\n`;
    },
    get usage() {
      return usage.usage;
    },
    get finished() {
      return state.finished;
    },
  };
}

/** OpenAI chunks from the upstream, Anthropic events to the client. */
export function openaiToAnthropicStream(opts: { clientModel: string; id: string }): StreamTranslator {
  const state = { usage: null as Usage | null, finished: false, started: false, stop: null as string | null };
  let open: { index: number; kind: 'text' | 'tool'; toolIndex?: number } | null = null;
  let blocks = 0;
  const close = (): string => {
    if (!open) return '';
    const out = sseEvent('content_block_stop', { type: 'content_block_stop', index: open.index });
    open = null;
    return out;
  };
  const start = (): string => {
    if (state.started) return '';
    state.started = true;
    return sseEvent('message_start', messageStart(opts.id, opts.clientModel));
  };
  return {
    event(e) {
      if (e.data === '[DONE]') {
        state.finished = true;
        return '';
      }
      const body = parse(e.data);
      if (!body) return '';
      let out = start();
      const usage = openaiUsage(body.usage);
      if (usage) state.usage = usage;
      const choice = body.choices?.[0];
      if (!choice) return out;
      const delta = choice.delta ?? {};
      if (typeof delta.content === 'string' && delta.content !== '') {
        if (open?.kind !== 'text') {
          out += close();
          open = { index: blocks++, kind: 'text' };
          out += sseEvent('content_block_start', {
            type: 'content_block_start',
            index: open.index,
            content_block: { type: 'text', text: '' },
          });
        }
        out += sseEvent('content_block_delta', {
          type: 'content_block_delta',
          index: open.index,
          delta: { type: 'text_delta', text: delta.content },
        });
      }
      for (const call of (Array.isArray(delta.tool_calls) ? delta.tool_calls : []) as Json[]) {
        if (!call || typeof call !== 'object') continue;
        if (call.id !== undefined || open?.kind !== 'tool' || open.toolIndex !== call.index) {
          out += close();
          open = { index: blocks++, kind: 'tool', toolIndex: call.index };
          out += sseEvent('content_block_start', {
            type: 'content_block_start',
            index: open.index,
            content_block: { type: 'tool_use', id: call.id, name: call.function?.name, input: {} },
          });
        }
        const piece = call.function?.arguments;
        if (typeof piece === 'string' && piece !== '') {
          out += sseEvent('content_block_delta', {
            type: 'content_block_delta',
            index: open.index,
            delta: { type: 'input_json_delta', partial_json: piece },
          });
        }
      }
      if (choice.finish_reason) state.stop = toAnthropicStop(choice.finish_reason);
      return out;
    },
    end() {
      const usage = state.usage ?? { input: 0, output: 0 };
      return (
        start() +
        close() +
        sseEvent('message_delta', {
          type: 'message_delta',
          delta: { stop_reason: state.stop ?? 'end_turn', stop_sequence: null },
          usage: toAnthropicUsage(usage),
        }) +
        sseEvent('message_stop', { type: 'message_stop' })
      );
    },
    get usage() {
      return state.usage;
    },
    get finished() {
      return state.finished;
    },
  };
}
