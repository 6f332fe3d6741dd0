import type { EventStreamCodec } from '@smithy/core/event-streams';
import type { SseEvent } from '../sse.js';
import type { VendorJson as Json } from '../vendor-json.js';
import { messageStart } from '../translate/streams.js';
import { namedEvent } from './sse-source.js';

/**
 * ConverseStream's answer, framed in AWS's binary event stream and read by AWS's own codec
 * (`getChunkedStream` reassembles messages from any chunking by their prelude, `EventStreamCodec`
 * checks both CRCs and decodes headers and payload): never hand-parsed. Its events become
 * Anthropic events:
 *   messageStart -> message_start; contentBlockStart (a tool use) -> content_block_start;
 *   contentBlockDelta -> content_block_delta (a text block's start is implied: it is sent first);
 *   contentBlockStop -> content_block_stop; messageStop keeps the stop reason; metadata, which
 *   carries the usage and comes last, -> message_delta (stop reason and usage) and message_stop.
 * A stream that ends after messageStop without metadata is whole (stopped, with no usage); one
 * that ends before messageStop was cut. An exception message (`:message-type: exception`, e.g.
 * throttlingException) or a frame the codec refuses throws.
 */
export const anthropicStop = (reason: unknown): string => {
  if (reason === 'tool_use' || reason === 'max_tokens' || reason === 'stop_sequence') return reason;
  if (reason === 'guardrail_intervened' || reason === 'content_filtered') return 'refusal';
  return 'end_turn';
};

/** Converse usage in Anthropic's names: inputTokens, as input_tokens, excludes the cache's tokens. */
export const converseUsage = (u: Json | undefined): Json | undefined =>
  u && typeof u.inputTokens === 'number'
    ? {
        input_tokens: u.inputTokens,
        output_tokens: u.outputTokens ?? 0,
        ...(typeof u.cacheReadInputTokens === 'number' ? { cache_read_input_tokens: u.cacheReadInputTokens } : {}),
        ...(typeof u.cacheWriteInputTokens === 'number'
          ? { cache_creation_input_tokens: u.cacheWriteInputTokens }
          : {}),
      }
    : undefined;

const utf8 = new TextDecoder('utf-8', { fatal: false });
const encoder = new TextEncoder();
/** AWS's codec, imported with the first Bedrock stream, not when the server starts. */
let codecs:
  | Promise<{ codec: EventStreamCodec; getChunkedStream: typeof import('@smithy/core/event-streams').getChunkedStream }>
  | undefined;
const eventStreams = () =>
  (codecs ??= import('@smithy/core/event-streams').then(({ EventStreamCodec, getChunkedStream }) => ({
    codec: new EventStreamCodec(
      (bytes) => utf8.decode(bytes),
      (text) => encoder.encode(text),
    ),
    getChunkedStream,
  })));

export async function* bedrockEvents(
  body: AsyncIterable<Buffer | Uint8Array>,
  opts: { clientModel: string; id: string },
): AsyncGenerator<SseEvent[]> {
  const { codec, getChunkedStream } = await eventStreams();
  const open = new Set<number>();
  let stop: string | null = null;
  let finished = false;
  const start = (index: number, block: Json): SseEvent[] => {
    open.add(index);
    return [namedEvent('content_block_start', { type: 'content_block_start', index, content_block: block })];
  };
  const end = (usage: Json | undefined): SseEvent[] => {
    finished = true;
    return [
      ...[...open].map((index) => namedEvent('content_block_stop', { type: 'content_block_stop', index })),
      namedEvent('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: stop ?? 'end_turn', stop_sequence: null },
        usage: usage ?? { output_tokens: 0 },
      }),
      namedEvent('message_stop', { type: 'message_stop' }),
    ];
  };
  for await (const frame of getChunkedStream(body as AsyncIterable<Uint8Array>)) {
    if (finished) continue;
    const message = codec.decode(frame);
    const header = (name: string) => {
      const h = message.headers[name];
      return h && h.type === 'string' ? h.value : '';
    };
    const payload = JSON.parse(utf8.decode(message.body)) as Json;
    if (header(':message-type') !== 'event') {
      const type = header(':exception-type') || header(':error-code') || 'exception';
      throw Object.assign(new Error(`bedrock ${type}: ${String(payload?.message ?? '')}`), { code: type });
    }
    const out: SseEvent[] = [];
    const index = typeof payload.contentBlockIndex === 'number' ? payload.contentBlockIndex : 0;
    switch (header(':event-type')) {
      case 'messageStart':
        out.push(namedEvent('message_start', messageStart(`msg_${opts.id}`, opts.clientModel)));
        break;
      case 'contentBlockStart': {
        const tool = payload.start?.toolUse;
        if (tool) out.push(...start(index, { type: 'tool_use', id: tool.toolUseId, name: tool.name, input: {} }));
        break;
      }
      case 'contentBlockDelta': {
        const delta = payload.delta ?? {};
        if (typeof delta.text === 'string') {
          if (!open.has(index)) out.push(...start(index, { type: 'text', text: '' }));
          out.push(
            namedEvent('content_block_delta', {
              type: 'content_block_delta',
              index,
              delta: { type: 'text_delta', text: delta.text },
            }),
          );
        } else if (typeof delta.toolUse?.input === 'string' && open.has(index)) {
          out.push(
            namedEvent('content_block_delta', {
              type: 'content_block_delta',
              index,
              delta: { type: 'input_json_delta', partial_json: delta.toolUse.input },
            }),
          );
        }
        break;
      }
      case 'contentBlockStop':
        if (open.delete(index)) out.push(namedEvent('content_block_stop', { type: 'content_block_stop', index }));
        break;
      case 'messageStop':
        stop = anthropicStop(payload.stopReason);
        break;
      case 'metadata':
        if (stop !== null) out.push(...end(converseUsage(payload.usage)));
        break;
      default:
        break;
    }
    if (out.length > 0) yield out;
  }
  if (!finished && stop !== null) yield end(undefined);
}
