import type { Upstream, UpstreamAnswer } from '../lib/upstream.js';
import { parseJson, type AttemptResult } from './forward.js';
import { FAILOVER } from './vendors/vendor.js';
import type { VendorJson as Json } from './vendor-json.js';

/**
 * One POST to a vendor for the routes forward.ts does not speak (Responses passed through,
 * embeddings, token counts), with forward.ts's rules for what the answer means: 408, 409, 429,
 * 401, 403, 5xx, a connection error or a timeout is a failure (fail over); another 4xx is the
 * client's request refused by the vendor; else the answer, to be read as JSON or as a stream.
 */
export type Exchanged =
  | { kind: 'answer'; answer: UpstreamAnswer; started: number }
  | Extract<AttemptResult, { kind: 'failed' } | { kind: 'refused' }>;

export async function exchange(
  upstream: Upstream,
  path: string,
  headers: Record<string, string>,
  body: Json,
  signal: AbortSignal,
): Promise<Exchanged> {
  const started = performance.now();
  let answer: UpstreamAnswer;
  try {
    answer = await upstream.post(path, headers, JSON.stringify(body), signal);
  } catch (err) {
    return { kind: 'failed', reason: (err as { code?: string }).code ?? (err as Error).name };
  }
  if (answer.statusCode >= 500 || FAILOVER.has(answer.statusCode)) {
    answer.body.resume();
    return { kind: 'failed', reason: `HTTP ${answer.statusCode}` };
  }
  if (answer.statusCode >= 400) {
    const text = await answer.body.text().catch(() => '');
    return { kind: 'refused', status: answer.statusCode, body: parseJson(text) ?? { message: text.slice(0, 500) } };
  }
  return { kind: 'answer', answer, started };
}
