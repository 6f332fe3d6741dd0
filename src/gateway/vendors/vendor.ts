import type { Attempt, Shape } from '../forward.js';
import type { SseEvent } from '../sse.js';
import type { VendorJson as Json } from '../vendor-json.js';

/**
 * The contract of a vendor kind beyond openai and anthropic (one file each, named in index.ts).
 * A vendor is translated through one of our two shapes, its `pivot`: the request is first put in
 * the pivot shape (forward.ts `bodyIn`, which also translates the client's shape), the adapter
 * turns that into the vendor's request, and the vendor's answers back into the pivot shape, from
 * which the existing translators reach the client's shape. So each vendor is translated both ways
 * for both request shapes, with two functions each way rather than four.
 *
 * Invariants an adapter keeps:
 * - `events` yields, in the pivot shape, events that a stream translator reads: text, tool calls,
 *   the stop reason and usage, and the pivot's closing event (`data: [DONE]` / `message_stop`)
 *   only once the vendor said the answer ended, so a stream cut midway stays cut.
 * - Bytes it cannot read make `events` throw (the attempt fails over, or the stream is cut);
 *   never a crash, never a hang. Any chunking of the same bytes yields the same events.
 * - `failure` maps the vendor's own error answers onto the gateway's failover rules (forward.ts):
 *   throttling, overload, 5xx, and the operator's credential refused are failures (the next model
 *   may serve); the client's request refused (validation) is answered as the vendor's refusal.
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
  /** For an answer of 400 or more: a failure's reason (fail over), or null (the client's request refused). */
  failure(status: number, headers: Record<string, string | string[] | undefined>, body: Json | null): string | null;
  /** A whole answer in the vendor's shape, in the pivot shape (throws on a shape it cannot read). */
  answer(body: Json, a: Attempt, id: string): Json;
  /** A streamed answer, as batches of pivot-shaped events (see the invariants above). */
  events(body: AsyncIterable<Buffer | Uint8Array>, a: Attempt, id: string): AsyncIterable<SseEvent[]>;
}

/**
 * What an adapter throws from `request` when the vendor has no way to carry something the client
 * asked for: the client's request refused by name (400), nothing sent, no failover.
 */
export class CannotCarry extends Error {}

/**
 * The statuses below 500 that are failures for every kind (forward.ts's rules). Kept here, not in
 * forward.ts, so that no adapter imports a value from forward.ts (which imports the adapters).
 */
export const FAILOVER = new Set([401, 403, 408, 409, 429]);

/** The gateway's usual rule: those and 5xx fail over. */
export const usualFailure = (status: number): string | null =>
  status >= 500 || FAILOVER.has(status) ? `HTTP ${status}` : null;
