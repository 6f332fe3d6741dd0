import { metrics } from '../lib/metrics.js';
import type { DataLossMode } from '../settings/schema.js';
import { countByKind, describeCounts, findSensitive, redact, type DlpKind, type Finding } from './dlp.js';
import type { Shape } from './forward.js';
import { SseReader, sseData, sseEvent } from './sse.js';
import type { VendorJson as Json } from './vendor-json.js';
import type { GatewayContext, GatewayEnv } from './steps/context.js';

/**
 * Data loss on the way back (issue 19 item 8): the answer's text is screened with the prompt's
 * detectors (dlp.ts), in the workspace's mode.
 * Rules:
 * - What is screened: OpenAI `choices[].message.content` (a string) and streamed
 *   `choices[].delta.content`; Anthropic `content[]` text blocks and streamed `text_delta`s. Tool
 *   calls' arguments are left as they are (as in the prompt, screen.ts).
 * - redact: each finding is replaced by `[REDACTED:<kind>]`. A stream holds back the tail of each
 *   choice's or block's text, so that a value split across chunks is found whole: the last 256
 *   characters, never cutting inside a run of non-space characters (a long token), from an
 *   unfinished `-----BEGIN` on (a PEM block), and from the start of a finding that reaches into
 *   the tail; never more than 16 KiB. What is held is released at the end of its choice or block
 *   (before the event that ends it) or of the stream. The released text is exactly what redacting
 *   the whole text at once gives.
 * - block: a finding refuses the answer. Not streamed: the caller answers 400
 *   sensitive_data_blocked in the route's shape. Streamed: nothing of the held text is released;
 *   the stream ends with the vendor's error event (OpenAI `data: {"error": …}`, Anthropic
 *   `event: error`), and `blocked` says so.
 * - Responses (POST /v1/responses, the shape the client receives, whether the vendor spoke it or
 *   it was translated from chat): `output[]` message items' `output_text` parts, and streamed
 *   `response.output_text.delta`s, held per output and content index by the same rule and released
 *   before the `response.output_text.done`, `response.content_part.done`, `response.output_item.done`
 *   or final (`response.completed`/`incomplete`/`failed`, `error`) event; the full texts those
 *   events carry are redacted too (block: a finding in them blocks). A blocked Responses stream ends
 *   with an `error` event (`code: sensitive_data_blocked`).
 * - Embeddings answers are vectors: there is no text to screen.
 * - Counts by kind only, never a value; the same metric as the prompt's, with `mode`.
 */
export type Counts = Partial<Record<DlpKind, number>>;

const HOLD = 256;
/** The Responses events after which no more text comes. */
const FINAL_RESPONSES = new Set(['response.completed', 'response.incomplete', 'response.failed', 'error']);
const MAX_HOLD = 16 * 1024;
/** The last white space of a text (one pass: each try runs to the next space at most). */
const LAST_SPACE = /\s\S*$/;

const add = (total: Counts, findings: readonly Finding[]) => {
  for (const [kind, n] of Object.entries(countByKind(findings)) as Array<[DlpKind, number]>)
    total[kind] = (total[kind] ?? 0) + n;
};

const count = (counts: Counts, mode: DataLossMode) => {
  for (const [kind, n] of Object.entries(counts)) metrics.dataLossFindings.inc({ kind, mode }, n);
};

/** The mode the answer is screened in: the workspace's (else the deployment's); undefined when off. */
export const answerScreen = (ctx: GatewayContext, env: GatewayEnv): 'redact' | 'block' | undefined => {
  const mode = ctx.own?.dataLoss ?? env.settings.dataLoss;
  return mode === 'off' ? undefined : mode;
};

/** Screens a whole answer (`openai`, `anthropic` or `responses` shape; embeddings are not read) in place (redact); the counts found (block: the caller refuses when any). */
export function screenAnswer(shape: string, body: Json, mode: DataLossMode): Counts {
  const found: Counts = {};
  if (mode === 'off') return found;
  const visit = (text: string, set: (v: string) => void) => {
    const findings = findSensitive(text);
    if (findings.length === 0) return;
    add(found, findings);
    if (mode === 'redact') set(redact(text, findings));
  };
  if (shape === 'openai' && Array.isArray(body.choices)) {
    for (const c of body.choices as Json[])
      if (c?.message && typeof c.message.content === 'string')
        visit(c.message.content, (v) => {
          c.message.content = v;
        });
  } else if (shape === 'anthropic' && Array.isArray(body.content)) {
    for (const b of body.content as Json[])
      if (b?.type === 'text' && typeof b.text === 'string')
        visit(b.text, (v) => {
          b.text = v;
        });
  } else if (shape === 'responses' && Array.isArray(body.output)) {
    for (const item of body.output as Json[])
      if (item?.type === 'message' && Array.isArray(item.content))
        for (const part of item.content as Json[])
          if (part?.type === 'output_text' && typeof part.text === 'string')
            visit(part.text, (v) => {
              part.text = v;
            });
  }
  count(found, mode);
  return found;
}

export const answerBlockedMessage = (found: Counts): string =>
  `The answer holds ${describeCounts(found)}, and this workspace blocks sensitive data.`;

/** One choice's or block's text on its way out: holds the tail, releases the rest redacted. */
export class TextHold {
  private pending = '';
  /** How long `pending` must grow before it is screened again. */
  private screenAt = 0;
  private readonly mode: 'redact' | 'block';
  private readonly found: Counts;

  constructor(mode: 'redact' | 'block', found: Counts) {
    this.mode = mode;
    this.found = found;
  }

  /** The text that may go out now; null when a finding blocks the answer. */
  push(text: string): string | null {
    this.pending += text;
    // What is held is screened again with each new piece: only once the new text is a 64th of
    // what is held, so the work stays linear in the answer (a 16 KiB tail without a space,
    // screened again at every 4-character delta, took 25 s for an 80 KB answer). Holding longer
    // never changes what is released, only when.
    if (this.pending.length < this.screenAt) return '';
    const released = this.release(false);
    this.screenAt = this.pending.length + (this.pending.length >> 6);
    return released;
  }

  /** Everything held, at the end of the text; null when a finding blocks the answer. */
  flush(): string | null {
    return this.release(true);
  }

  private release(all: boolean): string | null {
    const p = this.pending;
    const findings = findSensitive(p);
    if (this.mode === 'block' && findings.length > 0) {
      add(this.found, findings);
      this.pending = '';
      return null;
    }
    let cut = all ? p.length : Math.max(0, p.length - HOLD);
    if (!all && cut > 0) {
      const floor = Math.max(0, p.length - MAX_HOLD);
      // Back to just after the last space before the cut (the cut itself when it is at a space).
      if (!/\s/.test(p[cut]!)) {
        const last = LAST_SPACE.exec(p.slice(floor, cut));
        cut = last ? floor + last.index + 1 : floor;
      }
      const begin = p.lastIndexOf('-----BEGIN', cut);
      if (begin >= floor && begin !== -1 && p.indexOf('-----END', begin) === -1) cut = Math.min(cut, begin);
      for (const f of findings) if (f.start < cut && f.end > cut) cut = Math.max(floor, f.start);
    }
    const out = findings.filter((f) => f.end <= cut);
    add(this.found, out);
    this.pending = p.slice(cut);
    return redact(p.slice(0, cut), out);
  }
}

/**
 * Screens a stream of client-shaped SSE bytes (the translator's output): `push` and `end` return
 * the bytes to send instead. After a block, `blocked` holds the counts and both return only the
 * error event (once), then ''.
 */
export function createStreamScreen(shape: Shape | 'responses', mode: 'redact' | 'block') {
  const reader = new SseReader();
  const found: Counts = {};
  const holds = new Map<number, TextHold>();
  let blocked: Counts | null = null;
  let errorSent = false;
  /** The last chunk's envelope (OpenAI), for the chunks that release held text. */
  let envelope: Json | null = null;

  const hold = (i: number) => {
    let h = holds.get(i);
    if (!h) holds.set(i, (h = new TextHold(mode, found)));
    return h;
  };
  const block = (): string => {
    blocked = { ...found };
    if (errorSent) return '';
    errorSent = true;
    count(found, mode);
    const message = answerBlockedMessage(found);
    if (shape === 'responses')
      return sseEvent('error', { type: 'error', code: 'sensitive_data_blocked', message, param: null });
    return shape === 'openai'
      ? sseData({
          error: { message, type: 'sensitive_data_blocked', code: 'sensitive_data_blocked', param: null },
        })
      : sseEvent('error', { type: 'error', error: { type: 'invalid_request_error', message } });
  };
  /** The held text of one index (or all), as events to send before what ends it. */
  const flush = (only?: number): string | null => {
    let bytes = '';
    for (const [i, h] of holds) {
      if (only !== undefined && i !== only) continue;
      const text = h.flush();
      if (text === null) return null;
      holds.delete(i);
      if (text === '') continue;
      bytes +=
        shape === 'openai'
          ? sseData({ ...envelope, choices: [{ index: i, delta: { content: text }, finish_reason: null }] })
          : sseEvent('content_block_delta', {
              type: 'content_block_delta',
              index: i,
              delta: { type: 'text_delta', text },
            });
    }
    return bytes;
  };

  const openaiEvent = (data: string, raw: string): string | null => {
    if (data === '[DONE]') {
      const held = flush();
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
      const held = flush();
      if (held === null) return null;
      before = held;
    }
    for (const c of chunk.choices as Json[]) {
      const i = typeof c?.index === 'number' ? c.index : 0;
      if (typeof c?.delta?.content === 'string') {
        const text = hold(i).push(c.delta.content);
        if (text === null) return null;
        c.delta.content = text;
      }
      if (c?.finish_reason != null) {
        const held = flush(i);
        if (held === null) return null;
        before += held;
      }
    }
    return before + sseData(chunk);
  };

  const anthropicEvent = (name: string | null, data: string, raw: string): string | null => {
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
      const text = hold(i).push(event.delta.text);
      if (text === null) return null;
      if (text === '') return '';
      event.delta.text = text;
      return sseEvent(name, event);
    }
    const held = name === 'content_block_stop' ? flush(i) : flush();
    return held === null ? null : held + raw;
  };

  /** Responses: each output_text's hold by `output_index:content_index`, with its last delta event. */
  const texts = new Map<string, { hold: TextHold; output: number; last: Json }>();
  /** The held text of the matching Responses texts, as delta events. */
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
      if (Object.keys(found).length === 0) add(found, findings);
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

  const responsesEvent = (name: string | null, data: string, raw: string): string | null => {
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
    if (type === 'response.output_text.delta') {
      if (typeof event.delta !== 'string') return raw;
      let t = texts.get(key);
      if (!t) texts.set(key, (t = { hold: new TextHold(mode, found), output, last: event }));
      t.last = event;
      const text = t.hold.push(event.delta);
      if (text === null) return null;
      if (text === '') return '';
      return sseEvent(type, { ...event, delta: text });
    }
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
  };

  const screenBytes = (bytes: string): string => {
    if (blocked) return '';
    let out = '';
    for (const e of reader.push(bytes)) {
      const sent =
        shape === 'responses'
          ? responsesEvent(e.event, e.data, e.raw)
          : shape === 'openai'
            ? openaiEvent(e.data, e.raw)
            : anthropicEvent(e.event, e.data, e.raw);
      if (sent === null) return out + block();
      out += sent;
    }
    return out;
  };

  return {
    push: screenBytes,
    /** The stream's last bytes: whatever is still held goes out (or blocks). */
    end(bytes: string): string {
      let out = screenBytes(bytes);
      if (blocked) return out;
      const held = shape === 'responses' ? flushTexts(() => true) : flush();
      if (held === null) return out + block();
      out += held + reader.rest();
      count(found, mode);
      return out;
    },
    get blocked(): Counts | null {
      return blocked;
    },
    /** What was found (and redacted) so far. */
    found: (): Counts => found,
  };
}

export type StreamScreen = ReturnType<typeof createStreamScreen>;
