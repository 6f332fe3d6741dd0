import type { SseEvent } from '../sse.js';
import type { VendorJson as Json } from '../vendor-json.js';
import { geminiFinish, geminiUsage, readParts } from './gemini.js';
import { DONE, dataEvent, sseBatches } from './sse-source.js';

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
