import type { VendorJson as Json } from './vendor-json.js';
import { PassThrough, type Readable } from 'node:stream';
import type { GatewayModel, GatewayProvider } from '../settings/schema.js';
import type { Upstream, UpstreamAnswer } from '../lib/upstream.js';
import { createStreamScreen, type StreamScreen } from './response-screen.js';
import { SseReader } from './sse.js';
import { vendorAttempt } from './vendors/attempt.js';
import { vendorOf } from './vendors/index.js';
import { FAILOVER } from './vendors/vendor.js';
import { anthropicToOpenaiRequest, DEFAULT_MAX_TOKENS, openaiToAnthropicRequest } from './translate/requests.js';
import { OPENAI_TOOL_ID_MAX, rekeyChatToolIds } from './translate/tool-ids.js';
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

/**
 * One attempt at one model: the upstream request in its vendor's shape, and the answer in the
 * client's. Rules:
 * - The body is built once from the parsed client body (translated when the shapes differ) and
 *   sent with the provider's secret, the client's `anthropic-version` (or a default), its
 *   `anthropic-beta` to an Anthropic-kind vendor (the beta-only fields it sends need it) and the
 *   request's `traceparent`. Tool-call ids beyond what the vendor takes are re-keyed
 *   (translate/tool-ids.ts).
 * - An answer of 408, 409, 429 or 5xx, a connection error or a timeout is a failure: the caller
 *   may fail over. 401 and 403 are failures too (the operator's upstream secret is wrong, not the
 *   client's request). Other 4xx are the client's request refused by the vendor: answered, not
 *   failed over.
 * - Kinds other than openai and anthropic go through their adapter (vendors/), which builds on
 *   `bodyIn`, `answerFrom` and `translatorFor` here and keeps these same rules.
 * - A stream is committed only once the upstream's first event arrived: a failure before it
 *   can still fail over; after it, never. A stream that ends without the vendor's closing event
 *   is cut: the client's stream is destroyed (an error the client sees), never closed as if whole.
 * - A failure keeps the vendor's status and `retry-after` (deployments.ts retries on them).
 * - With `screen`, the client-shaped stream passes through response-screen.ts: redacted, or
 *   ended at a blocked finding with the vendor's error event (outcome `blocked`).
 */
export type Shape = 'openai' | 'anthropic';

export interface Attempt {
  shape: Shape;
  body: Json;
  stream: boolean;
  model: GatewayModel;
  provider: GatewayProvider;
  /** The model id the client's answer names. */
  clientModel: string;
  traceparent: string;
  anthropicVersion: string | undefined;
  /** The client's `anthropic-beta` (its values joined by commas), for an Anthropic-kind vendor. */
  anthropicBeta?: string | undefined;
  signal: AbortSignal;
  nowSeconds: number;
  /** Data loss on the way back (response-screen.ts): a stream's text is screened in this mode. */
  screen?: 'redact' | 'block' | undefined;
}

export type StreamEnd = {
  usage: Usage | null;
  outcome: 'ok' | 'cut' | 'cancelled' | 'blocked';
  /** What the screen found in the answer's text (counts by kind), when it screened. */
  findings?: Partial<Record<string, number>>;
};

export type AttemptResult =
  | { kind: 'failed'; reason: string; status?: number; retryAfter?: string | string[] | undefined }
  | { kind: 'refused'; status: number; body: Json }
  | { kind: 'json'; body: Json; usage: Usage | null; upstreamMs: number }
  | {
      kind: 'stream';
      stream: Readable;
      upstreamFirstByteMs: number;
      done: Promise<StreamEnd>;
    };

export const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';

/**
 * The client's body in `shape` (translated when the shapes differ), for the model's upstream name.
 * The adapters of other kinds (vendors/) start from this too.
 */
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

function upstreamRequest(a: Attempt): { path: string; headers: Record<string, string>; body: string } {
  const secret = a.provider.apiKey ?? '';
  if (a.provider.kind === 'openai') {
    return {
      path: '/chat/completions',
      headers: { authorization: `Bearer ${secret}`, traceparent: a.traceparent },
      body: JSON.stringify(rekeyChatToolIds(bodyIn('openai', a), OPENAI_TOOL_ID_MAX)),
    };
  }
  return {
    path: '/v1/messages',
    headers: {
      'x-api-key': secret,
      'anthropic-version': a.anthropicVersion ?? DEFAULT_ANTHROPIC_VERSION,
      // The betas the client's beta-only fields need (context management, effort, thinking...).
      ...(a.anthropicBeta ? { 'anthropic-beta': a.anthropicBeta } : {}),
      traceparent: a.traceparent,
    },
    body: JSON.stringify(bodyIn('anthropic', a)),
  };
}

/**
 * The stream translator from upstream events in `shape` to the client's shape. Same-shape events
 * pass through with `upstreamModel` renamed to the client's model.
 */
export function translatorFor(shape: Shape, a: Attempt, id: string, upstreamModel: string): StreamTranslator {
  const clientWantsUsage = a.body.stream_options?.include_usage === true;
  if (a.shape === 'openai') {
    return shape === 'openai'
      ? openaiPassThrough({ upstreamModel, clientModel: a.clientModel, clientWantsUsage })
      : anthropicToOpenaiStream({
          clientModel: a.clientModel,
          clientWantsUsage,
          id: `chatcmpl-${id}`,
          created: a.nowSeconds,
        });
  }
  return shape === 'anthropic'
    ? anthropicPassThrough({ upstreamModel, clientModel: a.clientModel })
    : openaiToAnthropicStream({ clientModel: a.clientModel, id: `msg_${id}` });
}

const translator = (a: Attempt, id: string): StreamTranslator =>
  translatorFor(a.provider.kind === 'openai' ? 'openai' : 'anthropic', a, id, a.model.upstreamModel);

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

export const parseJson = (text: string): Json | null => {
  try {
    const v = JSON.parse(text);
    return v && typeof v === 'object' ? (v as Json) : null;
  } catch {
    return null;
  }
};

/** The whole answer as a JSON object, or the failure it is. */
export async function readJson(
  answer: UpstreamAnswer,
  started: number,
): Promise<{ kind: 'body'; body: Json; upstreamMs: number } | Extract<AttemptResult, { kind: 'failed' }>> {
  let text: string;
  try {
    text = await answer.body.text();
  } catch (err) {
    return { kind: 'failed', reason: (err as { code?: string }).code ?? 'body' };
  }
  const upstreamMs = performance.now() - started;
  const body = parseJson(text);
  if (!body) return { kind: 'failed', reason: 'the upstream answered something other than JSON' };
  return { kind: 'body', body, upstreamMs };
}

export async function attempt(upstream: Upstream, a: Attempt, id: string): Promise<AttemptResult> {
  // Kinds beyond openai and anthropic have their own adapter (vendors/index.ts).
  const vendor = vendorOf(a.provider.kind);
  if (vendor) return vendorAttempt(upstream, a, id, vendor);
  const req = upstreamRequest(a);
  const started = performance.now();
  let answer: UpstreamAnswer;
  try {
    answer = await upstream.post(req.path, req.headers, req.body, a.signal);
  } catch (err) {
    return { kind: 'failed', reason: (err as { code?: string }).code ?? (err as Error).name };
  }
  if (answer.statusCode >= 500 || FAILOVER.has(answer.statusCode)) {
    answer.body.resume();
    return {
      kind: 'failed',
      reason: `HTTP ${answer.statusCode}`,
      status: answer.statusCode,
      retryAfter: answer.headers['retry-after'],
    };
  }
  if (answer.statusCode >= 400) {
    const text = await answer.body.text().catch(() => '');
    return { kind: 'refused', status: answer.statusCode, body: parseJson(text) ?? { message: text.slice(0, 500) } };
  }
  if (!a.stream) {
    const read = await readJson(answer, started);
    if (read.kind === 'failed') return read;
    try {
      return {
        kind: 'json',
        upstreamMs: read.upstreamMs,
        ...answerFrom(a.provider.kind === 'openai' ? 'openai' : 'anthropic', read.body, a),
      };
    } catch {
      // An answer in a shape the translation cannot read is the upstream's failure, not ours.
      return { kind: 'failed', reason: 'the upstream answered in a shape that could not be read' };
    }
  }
  return commitStream(answer, a, started, translator(a, id), a.screen ? createStreamScreen(a.shape, a.screen) : null);
}

/**
 * Waits for the upstream's first event; then the client's stream, fed event by event (through
 * `tr`, the attempt's translator unless another route gives its own, then the answer screen `sc`
 * when one is given).
 */
export function commitStream(
  answer: UpstreamAnswer,
  a: Pick<Attempt, 'signal'>,
  started: number,
  tr: StreamTranslator,
  sc: StreamScreen | null = null,
): Promise<AttemptResult> {
  const reader = new SseReader();
  const body = answer.body;
  body.setEncoding('utf8');
  return new Promise<AttemptResult>((resolve) => {
    let out: PassThrough | null = null;
    let settle!: (v: StreamEnd) => void;
    const done = new Promise<StreamEnd>((r) => {
      settle = r;
    });
    const onData = (chunk: string) => {
      try {
        forward(chunk);
      } catch (err) {
        // Upstream bytes the translator cannot read: the stream is cut, never the process.
        body.destroy(err as Error);
      }
    };
    const forward = (chunk: string) => {
      const events = reader.push(chunk);
      if (events.length === 0) return;
      if (!out) {
        out = new PassThrough();
        // Errors reach the client through hapi once it pipes this; until then they must not throw.
        out.on('error', () => {});
        // The client went away: stop reading the upstream (undici closes the connection).
        out.on('close', () => {
          if (!tr.finished) {
            body.destroy();
            settle({ usage: tr.usage, outcome: 'cancelled' });
          }
        });
        resolve({ kind: 'stream', stream: out, upstreamFirstByteMs: performance.now() - started, done });
      }
      let bytes = '';
      for (const e of events) bytes += tr.event(e);
      if (sc) bytes = sc.push(bytes);
      if (bytes !== '') out.write(bytes);
      if (sc?.blocked) {
        // The answer holds what the workspace blocks: its error event ends the stream.
        settle({ usage: tr.usage, outcome: 'blocked', findings: sc.blocked });
        body.off('data', onData);
        body.destroy();
        out.end();
      }
    };
    body.on('data', onData);
    body.on('end', () => {
      if (!out) {
        resolve({ kind: 'failed', reason: 'the upstream stream ended before its first event' });
        return;
      }
      if (sc?.blocked) return;
      if (tr.finished) {
        const last = sc ? sc.end(tr.end()) : tr.end();
        const end: StreamEnd = sc?.blocked
          ? { usage: tr.usage, outcome: 'blocked', findings: sc.blocked }
          : { usage: tr.usage, outcome: 'ok', ...(sc ? { findings: sc.found() } : {}) };
        settle(end);
        out.end(last);
      } else {
        out.destroy(new Error('the upstream stream was cut'));
        settle({ usage: tr.usage, outcome: 'cut' });
      }
    });
    body.on('error', (err: Error) => {
      if (sc?.blocked) return;
      if (!out) {
        resolve({ kind: 'failed', reason: (err as { code?: string }).code ?? err.name });
        return;
      }
      out.destroy(err);
      settle({ usage: tr.usage, outcome: a.signal.aborted ? 'cancelled' : 'cut' });
    });
  });
}
