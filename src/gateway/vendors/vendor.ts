import type { Attempt, Shape, VendorFault } from '../failover.js';
import type { SseEvent } from '../sse.js';
import type { VendorJson as Json } from '../vendor-json.js';

/**
 * A new vendor kind is one adapter file here (implementing `VendorAdapter`, named in index.ts),
 * its stream reader (`<kind>-stream.ts`, when its streams are not plain server-sent events in a
 * pivot shape), its loopback mock (test/helpers/mock-<kind>.ts, refusing what the real vendor
 * refuses) and its entry in the test matrix (test/gateway/vendor-<kind>.test.ts running
 * vendor-suite.ts, and the retry matrix in test/gateway/retries.test.ts). Nothing else changes:
 * the attempt, the failover rule and the stream commit (failover.ts) are the same for every kind.
 *
 * The contract of a vendor kind (openai, anthropic, azure-openai, gemini, bedrock). A vendor is
 * translated through one of our two shapes, its `pivot`: the request is first put in the pivot
 * shape (pivot.ts `bodyIn`, which also translates the client's shape), the adapter turns that
 * into the vendor's request, and the vendor's answers back into the pivot shape, from which the
 * existing translators reach the client's shape. So each vendor is translated both ways for both
 * request shapes, with two functions each way rather than four. OpenAI and Anthropic are adapters
 * whose vendor shape is their pivot.
 *
 * Invariants an adapter keeps:
 * - `events` yields, in the pivot shape, events that a stream translator reads: text, tool calls,
 *   the stop reason and usage, and the pivot's closing event (`data: [DONE]` / `message_stop`)
 *   only once the vendor said the answer ended, so a stream cut midway stays cut.
 * - Bytes it cannot read make `events` throw (the attempt fails over, or the stream is cut);
 *   never a crash, never a hang. Any chunking of the same bytes yields the same events.
 * - `fault` maps the vendor's own error answers onto the failover rule (failover.ts): throttling,
 *   overload, 5xx, and the operator's credential refused are failures (the next model may serve;
 *   throttling and the vendor's named wait are said so); the client's request refused
 *   (validation) is answered as the vendor's refusal, marked when it is the context window or the
 *   content policy (a profile may move those to another model).
 * - Capabilities beyond chat (`embeddings`, `responses`, `countTokens`) are present only where the
 *   vendor has the endpoint; a route asks the adapter, never the vendor kind.
 */
export interface UpstreamCall {
  /** The path after the provider's base URL, query string included. */
  path: string;
  headers: Record<string, string>;
  body: string;
}

export interface VendorAdapter {
  pivot: Shape;
  /** The vendor's request from the body in the pivot shape (model: the upstream model). */
  request(pivotBody: Json, a: Attempt): UpstreamCall | Promise<UpstreamCall>;
  /** For an answer of 400 or more: a failure (fail over) or the client's request refused. */
  fault(status: number, headers: Record<string, string | string[] | undefined>, body: Json | null): VendorFault;
  /** A whole answer in the vendor's shape, in the pivot shape (throws on a shape it cannot read). */
  answer(body: Json, a: Attempt, id: string): Json;
  /**
   * A streamed answer, as batches of pivot-shaped events (see the invariants above): either
   * `events`, reading the body itself, or `sse` for a vendor that streams server-sent events,
   * mapping each batch the gateway's reader completed, synchronously (no promise per chunk: the
   * cheaper path). One of the two is given.
   */
  events?(body: AsyncIterable<Buffer | Uint8Array>, a: Attempt, id: string): AsyncIterable<SseEvent[]>;
  sse?(a: Attempt, id: string): (batch: SseEvent[]) => SseEvent[];
  /** The model the pivot events name, renamed to the client's on the way (default: the client's already). */
  streamModel?(a: Attempt): string;
  /** POST /v1/embeddings (OpenAI shape both ways): the vendor's request. */
  embeddings?(a: Attempt): UpstreamCall;
  /** POST /v1/responses passed through as sent, for a provider marked `responses: true`. */
  responses?(a: Attempt): UpstreamCall;
  /** POST /v1/messages/count_tokens (Anthropic shape): the vendor's request. */
  countTokens?(a: Attempt): UpstreamCall;
}

/**
 * What an adapter throws from `request` when the vendor has no way to carry something the client
 * asked for: the client's request refused by name (400), nothing sent, no failover.
 */
export class CannotCarry extends Error {}
