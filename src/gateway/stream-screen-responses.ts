import { findSensitive, redact } from './dlp.js';
import type { EventScreen } from './response-screen.js';
import { sseData, sseEvent } from './sse.js';
import { addFindings, TextHold, type Counts } from './text-hold.js';
import type { VendorJson as Json } from './vendor-json.js';

/**
 * The stream screen's rule for Responses events (response-screen.ts): each
 * `response.output_text.delta` held by output and content index, released before the event that
 * closes it; the full texts later events carry redacted as the deltas were.
 */

/** The Responses events after which no more text comes. */
const FINAL_RESPONSES = new Set(['response.completed', 'response.incomplete', 'response.failed', 'error']);

export function responsesScreen(mode: 'redact' | 'block', found: Counts): EventScreen {
  /** Each output_text's hold by `output_index:content_index`, with its last delta event. */
  const texts = new Map<string, { hold: TextHold; output: number; last: Json }>();
  /** The held text of the matching texts, as delta events. */
  const flushTexts = (match: (output: number, key: string) => boolean): string | null => {
    let bytes = '';
    for (const [key, t] of texts) {
      if (!match(t.output, key)) continue;
      const text = t.hold.flush();
      if (text === null) return null;
      texts.delete(key);
      if (text !== '') bytes += sseEvent('response.output_text.delta', { ...t.last, delta: text });
    }
    return bytes;
  };
  /** A full text an event carries, redacted (null: it blocks). Its findings were counted as deltas. */
  const carried = (text: string): string | null => {
    const findings = findSensitive(text);
    if (findings.length === 0) return text;
    if (mode === 'block') {
      if (Object.keys(found).length === 0) addFindings(found, findings);
      return null;
    }
    return redact(text, findings);
  };
  /** Redacts the output_text parts in `parts` in place; false when one blocks. */
  const carriedParts = (parts: unknown): boolean => {
    if (!Array.isArray(parts)) return true;
    for (const part of parts as Json[]) {
      if (part?.type !== 'output_text' || typeof part.text !== 'string') continue;
      const text = carried(part.text);
      if (text === null) return false;
      part.text = text;
    }
    return true;
  };
  const carriedItems = (items: unknown): boolean =>
    !Array.isArray(items) || (items as Json[]).every((item) => item?.type !== 'message' || carriedParts(item.content));

  /** A delta: held, and what may go out now sent in its place. */
  const delta = (type: string, event: Json, key: string, output: number, raw: string): string | null => {
    if (typeof event.delta !== 'string') return raw;
    let t = texts.get(key);
    if (!t) texts.set(key, (t = { hold: new TextHold(mode, found), output, last: event }));
    t.last = event;
    const text = t.hold.push(event.delta);
    if (text === null) return null;
    if (text === '') return '';
    return sseEvent(type, { ...event, delta: text });
  };

  return {
    event(name, data, raw) {
      let event: Json;
      try {
        event = JSON.parse(data);
      } catch {
        return raw;
      }
      if (!event || typeof event !== 'object') return raw;
      const type = name ?? (typeof event.type === 'string' ? event.type : '');
      const output = typeof event.output_index === 'number' ? event.output_index : 0;
      const key = `${output}:${typeof event.content_index === 'number' ? event.content_index : 0}`;
      if (type === 'response.output_text.delta') return delta(type, event, key, output, raw);
      let held: string | null = '';
      if (type === 'response.output_text.done' || type === 'response.content_part.done')
        held = flushTexts((_o, k) => k === key);
      else if (type === 'response.output_item.done') held = flushTexts((o) => o === output);
      else if (FINAL_RESPONSES.has(type)) held = flushTexts(() => true);
      if (held === null) return null;
      // The full texts the event carries: as redacted as the deltas that went out.
      const before = JSON.stringify(event);
      if (type === 'response.output_text.done' && typeof event.text === 'string') {
        const text = carried(event.text);
        if (text === null) return null;
        event.text = text;
      }
      if (event.part && !carriedParts([event.part])) return null;
      if (event.item && !carriedItems([event.item])) return null;
      if (event.response && !carriedItems(event.response.output)) return null;
      const after = JSON.stringify(event);
      return held + (after === before ? raw : name ? sseEvent(name, event) : sseData(event));
    },
    flush: () => flushTexts(() => true),
    blocked: (message) => sseEvent('error', { type: 'error', code: 'sensitive_data_blocked', message, param: null }),
  };
}
