import { PassThrough, type Readable } from 'node:stream';
import { sleepOn } from '../lib/clock.js';
import type { Upstream, UpstreamAnswer } from '../lib/upstream.js';
import type { GatewayModel, GatewayProvider, PolicyProfile } from '../settings/schema.js';
import type { Deployment } from './deployments.js';
import type { StreamScreen } from './response-screen.js';
import { SseReader, type SseEvent } from './sse.js';
import type { Usage } from './translate/responses.js';
import type { StreamTranslator } from './translate/streams.js';
import type { GatewayContext, GatewayEnv, Outcome } from './steps/context.js';
import type { VendorJson as Json } from './vendor-json.js';

/**
 * One attempt at a vendor, and the one failover rule, for every route (chat completions,
 * messages, Responses, embeddings, token counts) and every vendor kind (vendors/: each adapter
 * says only what its vendor's own error answers mean). This module owns:
 * - the attempt's types (`Attempt`, `AttemptResult`, `StreamEnd`);
 * - what an answer means (`judge`): 401, 403, 408, 409, 429, 5xx, a connection error or a timeout
 *   is a failure (the next deployment or model may serve: 401 and 403 are the operator's upstream
 *   secret, not the client's request); another 4xx is the client's request refused by the vendor,
 *   answered as such; a failure keeps the vendor's wait (`retry-after` in seconds or an HTTP date,
 *   `retry-after-ms`, or what the adapter reads in the body: Gemini's `RetryInfo`) and whether it
 *   was throttling (429, 529, or the adapter's word: Bedrock's ThrottlingException); a refusal
 *   keeps whether it was the context window or the content policy (`fallback`);
 * - the one stream commit (`commitEvents`): a stream is committed once the upstream's first events
 *   arrived; a failure before them may fail over, after them never. A stream that ends without
 *   the vendor's closing event is cut: the client's stream is destroyed (an error the client
 *   sees), never closed as if whole;
 * - the rule for a request (`failover`): each candidate model in routing order; a model's
 *   deployments in order (deployments.ts); when all of them failed and one asked for a wait that
 *   ends within the request's deadline (its start plus `gateway.retry.deadlineMs`), that wait and
 *   the deployment once more (up to three waits a model); else the next model at once. A
 *   context-window or content-policy refusal moves on to the models the key's profile lists for
 *   it (`contextWindowFallbacks`, `contentPolicyFallbacks`), else it is answered. When every
 *   model failed and some failure was throttling without a wait named, the throttled deployment
 *   is tried again after a jittered backoff (250 ms doubling, each wait between half and all of
 *   it) while that ends within the deadline. What is left is `exhausted`, with the shortest wait
 *   a vendor named (the client's `429` and `retry-after`) and whether throttling was seen.
 *   Why not a resilience package: see deployments.ts.
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

/** A refusal the key's profile may move to another model (LiteLLM's context-window and content-policy fallbacks). */
export type FallbackKind = 'context_window' | 'content_policy';

export type Failed = {
  kind: 'failed';
  reason: string;
  status?: number;
  /** The vendor's wait: seconds or an HTTP date, as `retry-after` says it. */
  retryAfter?: string | undefined;
  /** Throttling (429, 529, or the vendor's own throttling error). */
  throttled?: boolean;
};
export type Refused = { kind: 'refused'; status: number; body: Json; fallback?: FallbackKind };

export type AttemptResult =
  | Failed
  | Refused
  | { kind: 'json'; body: Json; usage: Usage | null; upstreamMs: number }
  | {
      kind: 'stream';
      stream: Readable;
      upstreamFirstByteMs: number;
      done: Promise<StreamEnd>;
    };

/** What an adapter says of a vendor's error answer (status 400 or more). */
export interface VendorFault {
  /** A failure (fail over) with this reason; null: the client's request refused. */
  failure: string | null;
  /** The vendor throttled the request (retried with backoff when no other model serves). */
  throttled?: boolean;
  /** A wait the vendor named in its body (Gemini's RetryInfo), in seconds. */
  retryAfter?: string;
  /** For a refusal: the context window or the content policy. */
  fallback?: FallbackKind;
}

/** The statuses below 500 that are failures for every kind. */
export const FAILOVER = new Set([401, 403, 408, 409, 429]);

/** The usual rule: those and 5xx fail over; 429 and 529 (Anthropic's overloaded) are throttling. */
export const usualFault = (status: number): VendorFault => ({
  failure: status >= 500 || FAILOVER.has(status) ? `HTTP ${status}` : null,
  ...(status === 429 || status === 529 ? { throttled: true } : {}),
});

/** How an OpenAI-shaped error (OpenAI, Azure, compatible vendors) says context window or content policy. */
export function openaiFallback(body: Json | null): FallbackKind | undefined {
  const e = body?.error;
  const code = String(e?.code ?? '');
  const message = String(e?.message ?? '');
  if (code === 'context_length_exceeded' || /maximum context length|context window|too many tokens/i.test(message))
    return 'context_window';
  if (
    code === 'content_policy_violation' ||
    code === 'content_filter' ||
    e?.innererror?.code === 'ResponsibleAIPolicyViolation'
  )
    return 'content_policy';
  return undefined;
}

/** How Anthropic (and Bedrock's Claude) says the prompt does not fit: "prompt is too long", "exceed context limit". */
export function anthropicFallback(body: Json | null): FallbackKind | undefined {
  const message = String(body?.error?.message ?? body?.message ?? '');
  if (
    /prompt is too long|exceed(s)? (the )?context (limit|window)|input is too long|too many input tokens/i.test(message)
  )
    return 'context_window';
  return undefined;
}

export const parseJson = (text: string): Json | null => {
  try {
    const v = JSON.parse(text);
    return v && typeof v === 'object' ? (v as Json) : null;
  } catch {
    return null;
  }
};

const header = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** The vendor's wait from its headers: `retry-after` (seconds or an HTTP date), or OpenAI's `retry-after-ms`. */
function headerWait(headers: Record<string, string | string[] | undefined>): string | undefined {
  const after = header(headers['retry-after'])?.trim();
  if (after) return after;
  const ms = header(headers['retry-after-ms'])?.trim();
  if (ms && /^\d+(\.\d+)?$/.test(ms)) return String(Number(ms) / 1000);
  return undefined;
}

/** What an answer of 400 or more means: a failure (with its wait and throttling) or the client's refusal. */
export function judge(
  status: number,
  headers: Record<string, string | string[] | undefined>,
  text: string,
  fault: (status: number, headers: Record<string, string | string[] | undefined>, body: Json | null) => VendorFault,
): Failed | Refused {
  const body = parseJson(text);
  const said = fault(status, headers, body);
  if (said.failure !== null) {
    const retryAfter = headerWait(headers) ?? said.retryAfter;
    return {
      kind: 'failed',
      reason: said.failure,
      status,
      ...(retryAfter !== undefined ? { retryAfter } : {}),
      ...(said.throttled ? { throttled: true } : {}),
    };
  }
  return {
    kind: 'refused',
    status,
    body: body ?? { message: text.slice(0, 500) },
    ...(said.fallback ? { fallback: said.fallback } : {}),
  };
}

export type Sent = { kind: 'answer'; answer: UpstreamAnswer; started: number } | Failed | Refused;

/** At most this much of an error answer is read (its message, its wait). */
const ERROR_BYTES = 64 * 1024;

/** One POST to a vendor, judged: the answer to read (2xx), or the failure or refusal it is. */
export async function send(
  upstream: Upstream,
  call: { path: string; headers: Record<string, string>; body: string },
  signal: AbortSignal,
  fault: Parameters<typeof judge>[3],
): Promise<Sent> {
  const started = performance.now();
  let answer: UpstreamAnswer;
  try {
    answer = await upstream.post(call.path, call.headers, call.body, signal);
  } catch (err) {
    return { kind: 'failed', reason: (err as { code?: string }).code ?? (err as Error).name };
  }
  if (answer.statusCode < 400) return { kind: 'answer', answer, started };
  const text = await answer.body.text().catch(() => '');
  return judge(answer.statusCode, answer.headers, text.slice(0, ERROR_BYTES), fault);
}

/** The whole answer as a JSON object, or the failure it is. */
export async function readJson(
  answer: UpstreamAnswer,
  started: number,
): Promise<{ kind: 'body'; body: Json; upstreamMs: number } | Failed> {
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

/**
 * Where a stream's events come from: an async iterator of batches (an adapter's own reader), or
 * the body read as server-sent events, each batch mapped synchronously (`map`: the pivot-shaped
 * events of a vendor that streams SSE), fed from the body's `data` events without a promise per
 * chunk.
 */
export type EventSource =
  { kind: 'iterator'; events: AsyncIterator<SseEvent[]> } | { kind: 'sse'; map: (batch: SseEvent[]) => SseEvent[] };

/**
 * The one stream commit: waits for the first batch of events; then the client's stream, fed batch
 * by batch through `tr` (to the client's shape) and the answer screen `sc` when one is given.
 */
export function commitEvents(
  body: Readable,
  source: EventSource,
  tr: StreamTranslator,
  signal: AbortSignal,
  started: number,
  sc: StreamScreen | null,
): Promise<AttemptResult> {
  return new Promise<AttemptResult>((resolve) => {
    let out: PassThrough | null = null;
    let over = false;
    let settle!: (v: StreamEnd) => void;
    const done = new Promise<StreamEnd>((r) => {
      settle = r;
    });
    const finish = (end: StreamEnd) => {
      over = true;
      settle(end);
    };
    /** A blocked finding: its error event was the last write; the stream ends there. */
    const blocked = (): boolean => {
      if (!sc?.blocked || over || !out) return false;
      finish({ usage: tr.usage, outcome: 'blocked', findings: sc.blocked });
      body.destroy();
      out.end();
      return true;
    };
    const batch = (events: SseEvent[]) => {
      if (over) return;
      let bytes = '';
      for (const e of events) bytes += tr.event(e);
      if (sc) bytes = sc.push(bytes);
      if (!out) {
        const opened = new PassThrough();
        out = opened;
        // Errors reach the client through hapi once it pipes this; until then they must not throw.
        opened.on('error', () => {});
        // The client went away: stop reading the upstream (undici closes the connection).
        opened.on('close', () => {
          if (!over) {
            finish({ usage: tr.usage, outcome: 'cancelled' });
            body.destroy();
          }
        });
        resolve({ kind: 'stream', stream: opened, upstreamFirstByteMs: performance.now() - started, done });
      }
      if (bytes !== '') out.write(bytes);
      blocked();
    };
    const end = () => {
      if (!out) {
        resolve({ kind: 'failed', reason: 'the upstream stream ended before its first event' });
        return;
      }
      if (over) return;
      if (!tr.finished) {
        finish({ usage: tr.usage, outcome: 'cut' });
        out.destroy(new Error('the upstream stream was cut'));
        return;
      }
      const last = sc ? sc.end(tr.end()) : tr.end();
      if (sc?.blocked) {
        out.write(last);
        blocked();
        return;
      }
      finish({ usage: tr.usage, outcome: 'ok', ...(sc ? { findings: sc.found() } : {}) });
      out.end(last);
    };
    // Upstream bytes that cannot be read, or the connection lost: a failed attempt before the
    // first event, a cut stream after it; never the process.
    const fail = (err: Error) => {
      if (!out) {
        resolve({ kind: 'failed', reason: (err as { code?: string }).code ?? err.message });
        return;
      }
      if (over) return;
      finish({ usage: tr.usage, outcome: signal.aborted ? 'cancelled' : 'cut' });
      out.destroy(err);
    };
    if (source.kind === 'sse') {
      const reader = new SseReader();
      body.setEncoding('utf8');
      const onData = (chunk: string) => {
        try {
          const events = reader.push(chunk);
          if (events.length > 0) batch(source.map(events));
          if (over) body.off('data', onData);
        } catch (err) {
          body.destroy(err as Error);
        }
      };
      body.on('data', onData);
      body.on('end', end);
      body.on('error', fail);
      return;
    }
    void (async () => {
      try {
        for (;;) {
          const next = await source.events.next();
          if (next.done) break;
          batch(next.value);
          if (over) return;
        }
        end();
      } catch (err) {
        body.destroy();
        fail(err as Error);
      }
    })();
  });
}

/** Milliseconds a `retry-after` asks for (seconds or an HTTP date); undefined when absent or unreadable. */
export function retryAfterMs(value: string | string[] | undefined, nowMs: number): number | undefined {
  const text = header(value)?.trim();
  if (text === undefined || text === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** A Protocol Buffers duration as JSON writes it (`"30s"`, `"1.5s"`), in seconds as retry-after says them. */
export function durationSeconds(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const m = /^(\d+(?:\.\d+)?)s$/.exec(value.trim());
  return m ? String(Number(m[1])) : undefined;
}

/** The first backoff of throttling without a named wait; it doubles each time. */
export const BACKOFF_BASE_MS = 250;
/** The `n`th backoff (from 0): between half and all of 250 ms x 2^n ("equal jitter"). */
export const backoffMs = (n: number, random: () => number = Math.random): number => {
  const full = BACKOFF_BASE_MS * 2 ** n;
  return Math.round(full / 2 + random() * (full / 2));
};

/** Waits on one model: a vendor may name at most this many before the model is given up. */
const WAITS_PER_MODEL = 3;

type Answered = Extract<Outcome, { kind: 'answered' }>;
type Exhausted = Extract<Outcome, { kind: 'exhausted' }>;

/** What the request learned of its failures: the vendors' named waits, and throttling. */
interface Seen {
  /** The earliest moment (clock ms) a vendor said to come back, beyond the deadline. */
  comeBackAt: number | null;
  throttled: { model: GatewayModel; d: Deployment } | null;
}

/**
 * One model's turn in a request: its deployments in order, then (within the deadline) the one
 * whose named wait ends first. An answer (or the vendor's refusal), 'aborted' when the client
 * left, or null: fail over to the next model.
 */
async function tryModel(
  ctx: GatewayContext,
  env: GatewayEnv,
  model: GatewayModel,
  deployments: readonly Deployment[],
  attempt: (served: GatewayModel) => Promise<AttemptResult>,
  seen: Seen,
): Promise<Answered | 'aborted' | null> {
  const deadline = ctx.nowMs + env.settings.retry.deadlineMs;
  let wait: { d: Deployment; ms: number } | null = null;
  const one = async (d: Deployment): Promise<Answered | 'aborted' | null> => {
    // The model as this deployment serves it: the call record and headers name its provider.
    const served: GatewayModel = { ...model, provider: d.provider, upstreamModel: d.upstreamModel };
    const started = performance.now();
    const result = await attempt(served);
    if (result.kind === 'failed') {
      if (ctx.req.signal.aborted) return 'aborted';
      const now = env.clock.now();
      const ms = retryAfterMs(result.retryAfter, now);
      env.health.failure(d, ms);
      if (ms !== undefined) {
        if (wait === null || ms < wait.ms) wait = { d, ms };
        if (now + ms > deadline && (seen.comeBackAt === null || now + ms < seen.comeBackAt)) seen.comeBackAt = now + ms;
      } else if (result.throttled) seen.throttled ??= { model, d };
      return null;
    }
    env.health.success(
      d,
      result.kind === 'json'
        ? result.upstreamMs
        : result.kind === 'stream'
          ? result.upstreamFirstByteMs
          : performance.now() - started,
    );
    return { kind: 'answered', model: served, result };
  };
  for (const d of deployments) {
    const answered = await one(d);
    if (answered) return answered;
  }
  for (let n = 0; n < WAITS_PER_MODEL; n++) {
    const retry = wait as { d: Deployment; ms: number } | null;
    if (retry === null || env.clock.now() + retry.ms > deadline) return null;
    wait = null;
    await sleepOn(env.clock, retry.ms, ctx.req.signal);
    if (ctx.req.signal.aborted) return 'aborted';
    env.health.cooled(retry.d);
    const answered = await one(retry.d);
    if (answered) return answered;
  }
  return null;
}

/** The models a profile moves a refusal of this kind on to, after `from` (null: none, the refusal is answered). */
function fallbacksOf(profile: PolicyProfile | null, kind: FallbackKind, from: string): string[] | null {
  const map = kind === 'context_window' ? profile?.contextWindowFallbacks : profile?.contentPolicyFallbacks;
  return map?.[from] ?? map?.['*'] ?? null;
}

/**
 * The rule for one request (see the top of the file): `candidates`' deployments as planned
 * (deployments.ts), `attempt` sending one. `onModel` runs before each model after the first (the
 * budget's reservation follows the model tried); each model tried is added to `attempted`.
 */
export async function failover(
  ctx: GatewayContext,
  env: GatewayEnv,
  candidates: readonly GatewayModel[],
  attempt: (served: GatewayModel) => Promise<AttemptResult>,
  onModel: (model: GatewayModel) => Promise<void>,
): Promise<Outcome> {
  const seen: Seen = { comeBackAt: null, throttled: null };
  const attempted = ctx.attempted;
  let refusal: Answered | null = null;
  let only: string[] | null = null;
  for (const { model, deployments } of env.health.plan(candidates, ctx.profile)) {
    if (only && !only.includes(model.id)) continue;
    if (attempted.length > 0) await onModel(model);
    attempted.push(model.id);
    const answered = await tryModel(ctx, env, model, deployments, attempt, seen);
    if (answered === 'aborted') return { kind: 'exhausted' };
    if (!answered) continue;
    const { result } = answered;
    if (result.kind === 'refused' && result.fallback) {
      const next = fallbacksOf(ctx.profile, result.fallback, model.id);
      if (next) {
        refusal = answered;
        only = next;
        continue;
      }
    }
    return answered;
  }
  // Throttled without a named wait, and no other model served: back off and try it again.
  const deadline = ctx.nowMs + env.settings.retry.deadlineMs;
  const throttled = seen.throttled;
  if (throttled) {
    for (let n = 0; ; n++) {
      const ms = backoffMs(n);
      if (env.clock.now() + ms > deadline) break;
      await sleepOn(env.clock, ms, ctx.req.signal);
      if (ctx.req.signal.aborted) return { kind: 'exhausted' };
      seen.throttled = null;
      const answered = await tryModel(ctx, env, throttled.model, [throttled.d], attempt, seen);
      if (answered === 'aborted') return { kind: 'exhausted' };
      if (answered) return answered;
      // Failed otherwise than by throttling: backing off more would not help.
      if (!seen.throttled) break;
    }
  }
  if (refusal) return refusal;
  const out: Exhausted = { kind: 'exhausted' };
  if (seen.comeBackAt !== null) out.retryAfterMs = Math.max(0, seen.comeBackAt - env.clock.now());
  if (seen.throttled) out.throttled = true;
  return out;
}
