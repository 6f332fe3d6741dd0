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
 * - Counts by kind only, never a value; the same metric as the prompt's, with `mode`.
 */
export type Counts = Partial<Record<DlpKind, number>>;

const HOLD = 256;
const MAX_HOLD = 16 * 1024;

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

/** Screens a whole chat answer (`openai` or `anthropic` shape; other routes are not read) in place (redact); the counts found (block: the caller refuses when any). */
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
  }
  count(found, mode);
  return found;
}

export const answerBlockedMessage = (found: Counts): string =>
  `The answer holds ${describeCounts(found)}, and this workspace blocks sensitive data.`;

/** One choice's or block's text on its way out: holds the tail, releases the rest redacted. */
export class TextHold {
  private pending = '';

  constructor(
    private readonly mode: 'redact' | 'block',
    private readonly found: Counts,
  ) {}

  /** The text that may go out now; null when a finding blocks the answer. */
  push(text: string): string | null {
    this.pending += text;
    return this.release(false);
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
      const space = (i: number) => /\s/.test(p[i]!);
      while (cut > floor && !space(cut - 1) && !space(cut)) cut--;
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
export function createStreamScreen(shape: Shape, mode: 'redact' | 'block') {
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

  const screenBytes = (bytes: string): string => {
    if (blocked) return '';
    let out = '';
    for (const e of reader.push(bytes)) {
      const sent = shape === 'openai' ? openaiEvent(e.data, e.raw) : anthropicEvent(e.event, e.data, e.raw);
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
      const held = flush();
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
