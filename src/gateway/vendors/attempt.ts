import { PassThrough } from 'node:stream';
import type { Upstream, UpstreamAnswer } from '../../lib/upstream.js';
import {
  answerFrom,
  bodyIn,
  parseJson,
  readJson,
  translatorFor,
  type Attempt,
  type AttemptResult,
  type StreamEnd,
} from '../forward.js';
import { createStreamScreen } from '../response-screen.js';
import type { SseEvent } from '../sse.js';
import type { StreamTranslator } from '../translate/streams.js';
import { CannotCarry, type VendorAdapter } from './vendor.js';

/**
 * One attempt at a model of an adapted vendor kind (vendor.ts): the same rules as forward.ts
 * `attempt` (a failure may fail over; a stream is committed at its first event and never failed
 * over after it; a stream that ends without the vendor's closing event is cut), with the
 * vendor's request, error mapping and answers supplied by its adapter.
 */
export async function vendorAttempt(
  upstream: Upstream,
  a: Attempt,
  id: string,
  vendor: VendorAdapter,
): Promise<AttemptResult> {
  const started = performance.now();
  let answer: UpstreamAnswer;
  try {
    const req = await vendor.request(bodyIn(vendor.pivot, a), a);
    answer = await upstream.post(req.path, req.headers, req.body, a.signal);
  } catch (err) {
    if (err instanceof CannotCarry)
      return { kind: 'refused', status: 400, body: { error: { type: 'invalid_request_error', message: err.message } } };
    return { kind: 'failed', reason: (err as { code?: string }).code ?? (err as Error).name };
  }
  if (answer.statusCode >= 400) {
    const text = await answer.body.text().catch(() => '');
    const body = parseJson(text);
    const reason = vendor.failure(answer.statusCode, answer.headers, body);
    // The status and retry-after go with the failure: deployments.ts retries on them.
    if (reason !== null)
      return { kind: 'failed', reason, status: answer.statusCode, retryAfter: answer.headers['retry-after'] };
    return { kind: 'refused', status: answer.statusCode, body: body ?? { message: text.slice(0, 500) } };
  }
  if (!a.stream) {
    const read = await readJson(answer, started);
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
  // The adapters name the client's model in the pivot events they make.
  const tr = translatorFor(vendor.pivot, a, id, a.clientModel);
  return commitEvents(answer, vendor.events(answer.body, a, id)[Symbol.asyncIterator](), tr, a, started);
}

/** Waits for the first batch of events; then the client's stream, fed batch by batch. */
async function commitEvents(
  answer: UpstreamAnswer,
  events: AsyncIterator<SseEvent[]>,
  tr: StreamTranslator,
  a: Attempt,
  started: number,
): Promise<AttemptResult> {
  const body = answer.body;
  // The answer screen (response-screen.ts) sees the client-shaped bytes, as in forward.ts.
  const sc = a.screen ? createStreamScreen(a.shape, a.screen) : null;
  const bytesOf = (batch: SseEvent[]) => {
    const bytes = batch.map((e) => tr.event(e)).join('');
    return sc ? sc.push(bytes) : bytes;
  };
  let first: string;
  try {
    const next = await events.next();
    if (next.done) return { kind: 'failed', reason: 'the upstream stream ended before its first event' };
    first = bytesOf(next.value);
  } catch (err) {
    body.destroy();
    return { kind: 'failed', reason: (err as { code?: string }).code ?? (err as Error).message };
  }
  const out = new PassThrough();
  // Errors reach the client through hapi once it pipes this; until then they must not throw.
  out.on('error', () => {});
  let settle!: (v: StreamEnd) => void;
  const done = new Promise<StreamEnd>((r) => {
    settle = r;
  });
  let over = false;
  // The client went away: stop reading the upstream (undici closes the connection).
  out.on('close', () => {
    if (!over) {
      over = true;
      body.destroy();
      settle({ usage: tr.usage, outcome: 'cancelled' });
    }
  });
  /** A blocked finding: its error event was the last write; the stream ends there. */
  const blocked = (): boolean => {
    if (!sc?.blocked || over) return false;
    over = true;
    settle({ usage: tr.usage, outcome: 'blocked', findings: sc.blocked });
    body.destroy();
    out.end();
    return true;
  };
  if (first !== '') out.write(first);
  void (async () => {
    if (blocked()) return;
    try {
      for (;;) {
        const next = await events.next();
        if (next.done) break;
        const bytes = bytesOf(next.value);
        if (bytes !== '') out.write(bytes);
        if (blocked()) return;
      }
      if (over) return;
      if (tr.finished) {
        const last = sc ? sc.end(tr.end()) : tr.end();
        if (sc?.blocked) {
          out.write(last);
          blocked();
          return;
        }
        over = true;
        out.end(last);
        settle({ usage: tr.usage, outcome: 'ok', ...(sc ? { findings: sc.found() } : {}) });
      } else {
        over = true;
        out.destroy(new Error('the upstream stream was cut'));
        settle({ usage: tr.usage, outcome: 'cut' });
      }
    } catch (err) {
      // Upstream bytes the adapter cannot read, or the connection lost: cut, never the process.
      if (over) return;
      over = true;
      out.destroy(err as Error);
      settle({ usage: tr.usage, outcome: a.signal.aborted ? 'cancelled' : 'cut' });
    }
  })();
  return { kind: 'stream', stream: out, upstreamFirstByteMs: performance.now() - started, done };
}
