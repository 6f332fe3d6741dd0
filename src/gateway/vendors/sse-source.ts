import { StringDecoder } from 'node:string_decoder';
import { SseReader, type SseEvent } from '../sse.js';

/**
 * An upstream body read as server-sent events (the gateway's own SSE reader), one batch per
 * chunk that completed at least one event. UTF-8 split across chunks is joined first.
 */
export async function* sseBatches(body: AsyncIterable<Buffer | Uint8Array>): AsyncGenerator<SseEvent[]> {
  const reader = new SseReader();
  const decoder = new StringDecoder('utf8');
  for await (const chunk of body) {
    const events = reader.push(decoder.write(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk)));
    if (events.length > 0) yield events;
  }
  const events = reader.push(decoder.end());
  if (events.length > 0) yield events;
}

/** A data-only event carrying `json`, as the pivot translators read it. */
export const dataEvent = (json: unknown): SseEvent => {
  const data = JSON.stringify(json);
  return { event: null, data, raw: `data: ${data}\n\n` };
};

/** A named event carrying `json`. */
export const namedEvent = (name: string, json: unknown): SseEvent => {
  const data = JSON.stringify(json);
  return { event: name, data, raw: `event: ${name}\ndata: ${data}\n\n` };
};

export const DONE: SseEvent = { event: null, data: '[DONE]', raw: 'data: [DONE]\n\n' };
