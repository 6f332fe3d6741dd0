import type { Readable } from 'node:stream';
import type { Upstream, UpstreamAnswer } from '../lib/upstream.js';
import {
  commitEvents,
  readJson,
  send,
  type Attempt,
  type AttemptResult,
  type Failed,
  type Refused,
} from './failover.js';
import { answerFrom, bodyIn, translatorFor } from './pivot.js';
import { createStreamScreen, type StreamScreen } from './response-screen.js';
import { openaiUsage } from './translate/responses.js';
import type { StreamTranslator } from './translate/streams.js';
import { vendorOf } from './vendors/index.js';
import { CannotCarry, type UpstreamCall, type VendorAdapter } from './vendors/vendor.js';

export type { Attempt, AttemptResult, Shape, StreamEnd } from './failover.js';
export { readJson } from './failover.js';

/**
 * One attempt at one model, for each capability of a vendor kind: chat (both client shapes),
 * embeddings, token counts (and Responses passed through: responses/attempt.ts). Every capability
 * is the adapter's (vendors/), every answer is judged and every stream committed by the one rule
 * (failover.ts), so the routes differ only in the request they build and how they read a whole
 * answer. With `screen`, the client-shaped stream passes through response-screen.ts: redacted,
 * or ended at a blocked finding with the vendor's error event (outcome `blocked`).
 */
const refusedByName = (err: CannotCarry): Refused => ({
  kind: 'refused',
  status: 400,
  body: { error: { type: 'invalid_request_error', message: err.message } },
});

/** Sends a capability's request through the one rule; a request the adapter cannot build is refused by name. */
async function sendCall(
  upstream: Upstream,
  a: Attempt,
  vendor: VendorAdapter,
  build: () => UpstreamCall | Promise<UpstreamCall>,
) {
  let call: UpstreamCall;
  try {
    call = await build();
  } catch (err) {
    if (err instanceof CannotCarry) return refusedByName(err);
    return { kind: 'failed', reason: (err as { code?: string }).code ?? (err as Error).name } satisfies Failed;
  }
  return send(upstream, call, a.signal, vendor.fault);
}

/** Chat at one model through its vendor's adapter. */
export async function vendorAttempt(
  upstream: Upstream,
  a: Attempt,
  id: string,
  vendor: VendorAdapter,
): Promise<AttemptResult> {
  const sent = await sendCall(upstream, a, vendor, () => vendor.request(bodyIn(vendor.pivot, a), a));
  if (sent.kind !== 'answer') return sent;
  if (!a.stream) {
    const read = await readJson(sent.answer, sent.started);
    if (read.kind === 'failed') return read;
    try {
      return {
        kind: 'json',
        upstreamMs: read.upstreamMs,
        ...answerFrom(vendor.pivot, vendor.answer(read.body, a, id), a),
      };
    } catch {
      // An answer in a shape the translation cannot read is the upstream's failure, not ours.
      return { kind: 'failed', reason: 'the upstream answered in a shape that could not be read' };
    }
  }
  const tr = translatorFor(vendor.pivot, a, id, vendor.streamModel?.(a) ?? a.clientModel);
  const body = sent.answer.body;
  return commitEvents(
    body,
    vendor.sse
      ? { kind: 'sse', map: vendor.sse(a, id) }
      : { kind: 'iterator', events: vendor.events!(body, a, id)[Symbol.asyncIterator]() },
    tr,
    a.signal,
    sent.started,
    a.screen ? createStreamScreen(a.shape, a.screen) : null,
  );
}

/** Chat at one model (POST /v1/chat/completions, /v1/messages). */
export const attempt = (upstream: Upstream, a: Attempt, id: string): Promise<AttemptResult> =>
  vendorAttempt(upstream, a, id, vendorOf(a.provider.kind));

/**
 * POST /v1/embeddings at one model (OpenAI shape, both ways), where the kind's adapter has them:
 * the answer comes back with the catalogue's model name; usage is input tokens only. A kind
 * without embeddings is a failure of that attempt (the next candidate is tried).
 */
export async function attemptEmbeddings(upstream: Upstream, a: Attempt, _id: string): Promise<AttemptResult> {
  const vendor = vendorOf(a.provider.kind);
  const embeddings = vendor.embeddings;
  if (!embeddings)
    return { kind: 'failed', reason: `provider kind ${a.provider.kind} serves no embeddings through the gateway` };
  const sent = await sendCall(upstream, a, vendor, () => embeddings(a));
  if (sent.kind !== 'answer') return sent;
  const read = await readJson(sent.answer, sent.started);
  if (read.kind === 'failed') return read;
  const usage = openaiUsage(read.body.usage);
  return {
    kind: 'json',
    usage: usage && { input: usage.input, output: 0 },
    upstreamMs: read.upstreamMs,
    body: { ...read.body, model: a.clientModel },
  };
}

/**
 * POST /v1/messages/count_tokens at one model, where the kind's adapter counts: the vendor's
 * `{ input_tokens }` as the answer (usage null: counting is no model call). A kind that does not
 * count, or an answer without a count, is a failure (the caller counts locally).
 */
export async function attemptCount(upstream: Upstream, a: Attempt, _id: string): Promise<AttemptResult> {
  const vendor = vendorOf(a.provider.kind);
  const count = vendor.countTokens;
  if (!count) return { kind: 'failed', reason: `provider kind ${a.provider.kind} counts no tokens` };
  const sent = await sendCall(upstream, a, vendor, () => count(a));
  if (sent.kind !== 'answer') return sent;
  const read = await readJson(sent.answer, sent.started);
  if (read.kind === 'failed') return read;
  const n = read.body.input_tokens;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0)
    return { kind: 'failed', reason: 'the upstream answered without input_tokens' };
  return { kind: 'json', usage: null, upstreamMs: read.upstreamMs, body: { input_tokens: n } };
}

/**
 * POST /v1/responses passed through, where the kind's adapter has it (responses/attempt.ts reads
 * the answer): the answer to read, or the failure or refusal it is.
 */
export async function sendResponses(upstream: Upstream, a: Attempt) {
  const vendor = vendorOf(a.provider.kind);
  const responses = vendor.responses;
  if (!responses) return { kind: 'failed', reason: `provider kind ${a.provider.kind} speaks no Responses` } as Failed;
  return sendCall(upstream, a, vendor, () => responses(a));
}

/** Whether the kind's adapter passes Responses through, and the provider is marked for it. */
export const passesResponses = (a: Pick<Attempt, 'provider'>): boolean =>
  a.provider.responses === true && vendorOf(a.provider.kind).responses !== undefined;

/** A server-sent-events answer committed through `tr` (the one stream commit, failover.ts). */
export const commitStream = (
  answer: UpstreamAnswer,
  a: Pick<Attempt, 'signal'>,
  started: number,
  tr: StreamTranslator,
  sc: StreamScreen | null = null,
): Promise<AttemptResult> =>
  commitEvents(answer.body as Readable, { kind: 'sse', map: (batch) => batch }, tr, a.signal, started, sc);
