import { finished, PassThrough, type Readable } from 'node:stream';
import type { Upstream } from '../../lib/upstream.js';
import type { GatewayProvider } from '../../settings/schema.js';
import {
  attempt,
  commitStream,
  passesResponses,
  readJson,
  sendResponses,
  type Attempt,
  type AttemptResult,
} from '../forward.js';
import { createStreamScreen, type StreamScreen } from '../response-screen.js';
import { SseReader } from '../sse.js';
import { responsesApiUsage, type Usage } from '../translate/responses.js';
import {
  chatToResponse,
  chatToResponsesStream,
  responsesToChatRequest,
  type ResponseIds,
  type ResponsesStreamTranslator,
} from '../translate/responses-api.js';
import type { StreamTranslator } from '../translate/streams.js';
import type { VendorJson as Json } from '../vendor-json.js';

/**
 * POST /v1/responses at one model. A provider that speaks Responses (a provider with `responses:
 * true` whose kind's adapter has the capability: vendors/openai.ts) gets the body as it is (the
 * upstream model's name; max_output_tokens bounded, so the reservation bounds the call), and its
 * answer and events come back with the catalogue's model name. Any other vendor is asked in chat
 * completions (translate/responses-api.ts), through forward.ts, which translates on to the
 * vendor's own shape; its answer and stream are translated back. Failover, refusals and the
 * stream's commit follow failover.ts's rule either way.
 * Data loss on the way back (response-screen.ts) screens what the client receives, in the
 * Responses shape, either way: the answer by the accounting step, a stream here (the chat attempt
 * under a translation is not screened itself, so the text is screened once).
 */
export const speaksResponses = (p: GatewayProvider): boolean => passesResponses({ provider: p });

export async function attemptResponses(upstream: Upstream, a: Attempt, id: string): Promise<AttemptResult> {
  const ids: ResponseIds = { id, model: a.clientModel, createdAt: a.nowSeconds };
  if (speaksResponses(a.provider)) return passThrough(upstream, a);
  const chat = { ...a, shape: 'openai' as const, body: responsesToChatRequest(a.body), screen: undefined };
  const result = await attempt(upstream, chat, id);
  if (result.kind === 'json') return { ...result, body: chatToResponse(result.body, a.body, ids, result.usage) };
  if (result.kind !== 'stream') return result;
  const sc = a.screen ? createStreamScreen('responses', a.screen) : null;
  const stream = translateStream(result.stream, chatToResponsesStream(a.body, ids), sc);
  if (!sc) return { ...result, stream };
  // The outcome once the translated stream is over too: blocked by the screen, with what it found.
  const over = new Promise<void>((r) => finished(stream, { readable: false }, () => r()));
  const done = Promise.all([result.done, over]).then(([end]) =>
    sc.blocked
      ? { ...end, outcome: 'blocked' as const, findings: sc.blocked }
      : { ...end, findings: { ...sc.found() } },
  );
  return { ...result, stream, done };
}

async function passThrough(upstream: Upstream, a: Attempt): Promise<AttemptResult> {
  // The request is the adapter's (vendors/openai.ts), judged by the one failover rule.
  const sent = await sendResponses(upstream, a);
  if (sent.kind !== 'answer') return sent;
  if (!a.stream) {
    const read = await readJson(sent.answer, sent.started);
    if (read.kind === 'failed') return read;
    return {
      kind: 'json',
      usage: responsesApiUsage(read.body.usage),
      upstreamMs: read.upstreamMs,
      body: { ...read.body, model: a.clientModel },
    };
  }
  return commitStream(
    sent.answer,
    a,
    sent.started,
    responsesPassThrough(a.model.upstreamModel, a.clientModel),
    a.screen ? createStreamScreen('responses', a.screen) : null,
  );
}

const LIFECYCLE = new Set([
  'response.created',
  'response.queued',
  'response.in_progress',
  'response.completed',
  'response.incomplete',
  'response.failed',
]);
const FINAL = new Set(['response.completed', 'response.incomplete', 'response.failed', 'error']);

/** A Responses vendor's events as received; the model renamed, the usage kept from the last one. */
export function responsesPassThrough(upstreamModel: string, clientModel: string): StreamTranslator {
  const from = `"model":${JSON.stringify(upstreamModel)}`;
  const to = `"model":${JSON.stringify(clientModel)}`;
  const state = { usage: null as Usage | null, finished: false };
  return {
    event(e) {
      const type = e.event ?? '';
      if (!LIFECYCLE.has(type) && type !== 'error') return e.raw;
      if (FINAL.has(type)) {
        state.finished = true;
        try {
          const usage = responsesApiUsage((JSON.parse(e.data) as Json)?.response?.usage);
          if (usage) state.usage = usage;
        } catch {
          // An event that is not JSON passes as it is; its usage is unknown.
        }
      }
      return upstreamModel === clientModel ? e.raw : e.raw.replace(from, to);
    },
    end: () => '',
    get usage() {
      return state.usage;
    },
    get finished() {
      return state.finished;
    },
  };
}

/**
 * The client's chat stream (forward.ts's, already committed) re-read as Responses events. A chat
 * stream that ends without [DONE] or breaks (a cut upstream) ends the client's stream with an
 * `error` event; the client leaving stops the chat stream, and with it the upstream. With a
 * screen `sc`, the Responses events pass through it; a block ends the stream with its error event.
 */
export function translateStream(
  chat: Readable,
  tr: ResponsesStreamTranslator,
  sc: StreamScreen | null = null,
): Readable {
  const out = new PassThrough();
  out.on('error', () => {});
  const reader = new SseReader();
  chat.setEncoding('utf8');
  chat.on('data', (chunk: string) => {
    try {
      if (out.writableEnded) return;
      let bytes = '';
      for (const e of reader.push(chunk)) bytes += tr.event(e);
      if (sc) bytes = sc.push(bytes);
      if (bytes !== '') out.write(bytes);
      if (sc?.blocked) {
        out.end();
        chat.destroy();
      }
    } catch (err) {
      chat.destroy(err as Error);
    }
  });
  const last = (bytes: string) => (sc ? sc.end(bytes) : bytes);
  chat.on('end', () => {
    if (!out.writableEnded) out.end(last(tr.finished ? '' : tr.fail('the model stream ended before it finished')));
  });
  chat.on('error', () => {
    if (!out.writableEnded) out.end(last(tr.fail('the model stream was cut')));
  });
  out.on('close', () => {
    if (!chat.destroyed) chat.destroy();
  });
  return out;
}
