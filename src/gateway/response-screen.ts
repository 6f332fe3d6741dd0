import type { DataLossMode } from '../settings/schema.js';
import { describeCounts, findSensitive, redact } from './dlp.js';
import type { Shape } from './forward.js';
import { SseReader } from './sse.js';
import { anthropicScreen, openaiScreen } from './stream-screen-chat.js';
import { responsesScreen } from './stream-screen-responses.js';
import { addFindings, countFindings, type Counts } from './text-hold.js';
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
 * The hold is text-hold.ts; each shape's stream rule is stream-screen-chat.ts (OpenAI,
 * Anthropic) or stream-screen-responses.ts.
 */
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
    addFindings(found, findings);
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
  countFindings(found, mode);
  return found;
}

export const answerBlockedMessage = (found: Counts): string =>
  `The answer holds ${describeCounts(found)}, and this workspace blocks sensitive data.`;

export { TextHold, type Counts } from './text-hold.js';

/** One shape's rule for a stream's events, over the holds it keeps (stream-screen-*.ts). */
export interface EventScreen {
  /** The bytes to send instead of the event `raw` ('' holds it all back); null when a finding blocks the answer. */
  event(name: string | null, data: string, raw: string): string | null;
  /** Everything still held, as events of the shape (the stream's end); null when a finding blocks. */
  flush(): string | null;
  /** The event that ends a blocked stream, in the shape (its SDKs raise it). */
  blocked(message: string): string;
}

/**
 * A stream's data-loss screen on the way back: the bytes to send instead of the client-shaped SSE
 * bytes (the translator's output) it is given. Holds the tail of each text (the rules above);
 * after a block, only the shape's error event goes out (once), then nothing. Reads and writes no
 * store: it counts what it found (the findings metric) and says so.
 */
export interface StreamScreen {
  /** The bytes to send now for these. */
  push(bytes: string): string;
  /** The stream's last bytes: whatever is still held goes out (or blocks). */
  end(bytes: string): string;
  /** The counts that blocked the stream; null while it is not blocked. */
  readonly blocked: Counts | null;
  /** What was found (and redacted) so far. */
  found(): Counts;
}

/** Screens a stream of the route's shape (`openai`, `anthropic` or `responses`) in `mode`. */
export function createStreamScreen(shape: Shape | 'responses', mode: 'redact' | 'block'): StreamScreen {
  const reader = new SseReader();
  const found: Counts = {};
  const events =
    shape === 'responses'
      ? responsesScreen(mode, found)
      : shape === 'openai'
        ? openaiScreen(mode, found)
        : anthropicScreen(mode, found);
  let blocked: Counts | null = null;
  let errorSent = false;

  const block = (): string => {
    blocked = { ...found };
    if (errorSent) return '';
    errorSent = true;
    countFindings(found, mode);
    return events.blocked(answerBlockedMessage(found));
  };

  const screenBytes = (bytes: string): string => {
    if (blocked) return '';
    let out = '';
    for (const e of reader.push(bytes)) {
      const sent = events.event(e.event, e.data, e.raw);
      if (sent === null) return out + block();
      out += sent;
    }
    return out;
  };

  return {
    push: screenBytes,
    end(bytes: string): string {
      let out = screenBytes(bytes);
      if (blocked) return out;
      const held = events.flush();
      if (held === null) return out + block();
      out += held + reader.rest();
      countFindings(found, mode);
      return out;
    },
    get blocked(): Counts | null {
      return blocked;
    },
    found: (): Counts => found,
  };
}
