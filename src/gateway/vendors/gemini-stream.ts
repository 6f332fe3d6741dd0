import type { SseEvent } from '../sse.js';
import type { VendorJson as Json } from '../vendor-json.js';
import { DONE, dataEvent, sseBatches } from './sse-source.js';

/** Where a tool call id carries Gemini's thought signature (gemini.ts reads it back). */
export const SIGNATURE = '__ts_';

/** The tool call id for a call, carrying its thought signature when Gemini gave one. */
const callId = (base: string, signature: unknown): string =>
  typeof signature === 'string' && signature !== ''
    ? `${base}${SIGNATURE}${Buffer.from(signature, 'base64').toString('base64url')}`
    : base;

export const geminiFinish = (reason: unknown, calledTool: boolean): string | null => {
  if (reason === undefined || reason === null) return null;
  if (calledTool) return 'tool_calls';
  if (reason === 'STOP') return 'stop';
  if (reason === 'MAX_TOKENS') return 'length';
  if (['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY'].includes(String(reason)))
    return 'content_filter';
  return 'stop';
};

/**
 * OpenAI usage from Gemini's usageMetadata, or undefined: promptTokenCount includes the cached
 * cachedContentTokenCount (OpenAI's cached_tokens); thinking tokens are output (reasoning_tokens).
 */
export const geminiUsage = (u: Json | undefined): Json | undefined => {
  if (!u || typeof u.promptTokenCount !== 'number') return undefined;
  const thoughts = Number(u.thoughtsTokenCount ?? 0);
  const completion = Number(u.candidatesTokenCount ?? 0) + thoughts;
  return {
    prompt_tokens: u.promptTokenCount,
    completion_tokens: completion,
    total_tokens: u.promptTokenCount + completion,
    ...(u.cachedContentTokenCount ? { prompt_tokens_details: { cached_tokens: u.cachedContentTokenCount } } : {}),
    ...(thoughts ? { completion_tokens_details: { reasoning_tokens: thoughts } } : {}),
  };
};

/** A candidate's parts as OpenAI text and tool calls; `n` numbers the calls across a stream. */
export function readParts(parts: unknown, id: string, n: { calls: number }): { text: string; calls: Json[] } {
  let text = '';
  const calls: Json[] = [];
  for (const p of (Array.isArray(parts) ? parts : []) as Json[]) {
    if (typeof p?.text === 'string' && p.thought !== true) text += p.text;
    if (p?.functionCall && typeof p.functionCall === 'object') {
      const index = n.calls++;
      calls.push({
        index,
        id: callId(
          typeof p.functionCall.id === 'string' ? p.functionCall.id : `call_${id}_${index}`,
          p.thoughtSignature,
        ),
        type: 'function',
        function: { name: String(p.functionCall.name ?? ''), arguments: JSON.stringify(p.functionCall.args ?? {}) },
      });
    }
  }
  return { text, calls };
}

/**
 * Gemini's streamGenerateContent (`alt=sse`: each event a whole GenerateContentResponse holding
 * the next piece) as OpenAI chunks: text as content deltas, each functionCall as one tool call
 * with its whole arguments, and, at the candidate's finishReason (Gemini's end of answer), the
 * finish chunk, the usage chunk and `[DONE]`. A stream that ends before a finishReason was cut.
 * An event that is not JSON throws (the attempt fails, or the stream is cut).
 */
export async function* geminiEvents(
  body: AsyncIterable<Buffer | Uint8Array>,
  opts: { clientModel: string; id: string; created: number },
): AsyncGenerator<SseEvent[]> {
  const n = { calls: 0 };
  let started = false;
  let finished = false;
  let calledTool = false;
  // Each event may carry the counts so far; the last one seen is the answer's.
  let usage: Json | undefined;
  const chunk = (delta: Json, finish: string | null = null): SseEvent =>
    dataEvent({
      id: `chatcmpl-${opts.id}`,
      object: 'chat.completion.chunk',
      created: opts.created,
      model: opts.clientModel,
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
    });
  for await (const batch of sseBatches(body)) {
    const out: SseEvent[] = [];
    for (const e of batch) {
      if (finished) continue;
      const response = JSON.parse(e.data) as Json;
      if (!response || typeof response !== 'object') throw new Error('a Gemini stream event that is not an object');
      const candidate = (response.candidates?.[0] ?? {}) as Json;
      usage = geminiUsage(response.usageMetadata) ?? usage;
      const { text, calls } = readParts(candidate.content?.parts, opts.id, n);
      const delta: Json = started ? {} : { role: 'assistant' };
      started = true;
      if (text !== '') delta.content = text;
      if (calls.length > 0) {
        calledTool = true;
        delta.tool_calls = calls;
      }
      if (Object.keys(delta).length > 0) out.push(chunk(delta));
      const blocked = response.promptFeedback?.blockReason !== undefined && !Array.isArray(response.candidates);
      const finish = blocked ? 'content_filter' : geminiFinish(candidate.finishReason, calledTool);
      if (finish !== null) {
        finished = true;
        out.push(chunk({}, finish));
        if (usage)
          out.push(
            dataEvent({
              id: `chatcmpl-${opts.id}`,
              object: 'chat.completion.chunk',
              created: opts.created,
              model: opts.clientModel,
              choices: [],
              usage,
            }),
          );
        out.push(DONE);
      }
    }
    if (out.length > 0) yield out;
  }
}
