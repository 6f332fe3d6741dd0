import type { VendorJson as Json } from './vendor-json.js';
import type { EventScreen } from './response-screen.js';
import { sseData, sseEvent } from './sse.js';
import { TextHold, type Counts } from './text-hold.js';

/**
 * The stream screen's rule for the chat shapes (response-screen.ts): OpenAI chat completion
 * chunks' `choices[].delta.content` and Anthropic messages' `text_delta`s, held per choice or
 * content block index and released before what ends it.
 */

/** The holds by index, and their release as events of the shape. */
function holdsOf(mode: 'redact' | 'block', found: Counts, eventOf: (index: number, text: string) => string) {
  const holds = new Map<number, TextHold>();
  return {
    hold(i: number): TextHold {
      let h = holds.get(i);
      if (!h) holds.set(i, (h = new TextHold(mode, found)));
      return h;
    },
    /** The held text of one index (or all), as events to send before what ends it. */
    flush(only?: number): string | null {
      let bytes = '';
      for (const [i, h] of holds) {
        if (only !== undefined && i !== only) continue;
        const text = h.flush();
        if (text === null) return null;
        holds.delete(i);
        if (text !== '') bytes += eventOf(i, text);
      }
      return bytes;
    },
  };
}

/** OpenAI chat completion chunks (`data:` lines, `[DONE]`). */
export function openaiScreen(mode: 'redact' | 'block', found: Counts): EventScreen {
  /** The last chunk's envelope, for the chunks that release held text. */
  let envelope: Json | null = null;
  const holds = holdsOf(mode, found, (i, text) =>
    sseData({ ...envelope, choices: [{ index: i, delta: { content: text }, finish_reason: null }] }),
  );
  return {
    event(_name, data, raw) {
      if (data === '[DONE]') {
        const held = holds.flush();
        return held === null ? null : held + raw;
      }
      let chunk: Json;
      try {
        chunk = JSON.parse(data);
      } catch {
        return raw;
      }
      if (!chunk || typeof chunk !== 'object' || !Array.isArray(chunk.choices)) return raw;
      const { choices: _choices, usage: _usage, ...rest } = chunk;
      envelope = rest;
      let before = '';
      if (chunk.choices.length === 0) {
        // The usage chunk comes after every choice finished.
        const held = holds.flush();
        if (held === null) return null;
        before = held;
      }
      for (const c of chunk.choices as Json[]) {
        const i = typeof c?.index === 'number' ? c.index : 0;
        if (typeof c?.delta?.content === 'string') {
          const text = holds.hold(i).push(c.delta.content);
          if (text === null) return null;
          c.delta.content = text;
        }
        if (c?.finish_reason != null) {
          const held = holds.flush(i);
          if (held === null) return null;
          before += held;
        }
      }
      return before + sseData(chunk);
    },
    flush: () => holds.flush(),
    blocked: (message) =>
      sseData({
        error: { message, type: 'sensitive_data_blocked', code: 'sensitive_data_blocked', param: null },
      }),
  };
}

/** Anthropic messages events (`content_block_delta`, `content_block_stop`, `message_delta`, `message_stop`). */
export function anthropicScreen(mode: 'redact' | 'block', found: Counts): EventScreen {
  const holds = holdsOf(mode, found, (i, text) =>
    sseEvent('content_block_delta', { type: 'content_block_delta', index: i, delta: { type: 'text_delta', text } }),
  );
  return {
    event(name, data, raw) {
      if (
        name !== 'content_block_delta' &&
        name !== 'content_block_stop' &&
        name !== 'message_delta' &&
        name !== 'message_stop'
      )
        return raw;
      let event: Json;
      try {
        event = JSON.parse(data);
      } catch {
        return raw;
      }
      const i = typeof event?.index === 'number' ? event.index : 0;
      if (name === 'content_block_delta') {
        if (event.delta?.type !== 'text_delta' || typeof event.delta.text !== 'string') return raw;
        const text = holds.hold(i).push(event.delta.text);
        if (text === null) return null;
        if (text === '') return '';
        event.delta.text = text;
        return sseEvent(name, event);
      }
      const held = name === 'content_block_stop' ? holds.flush(i) : holds.flush();
      return held === null ? null : held + raw;
    },
    flush: () => holds.flush(),
    blocked: (message) => sseEvent('error', { type: 'error', error: { type: 'invalid_request_error', message } }),
  };
}
