import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { Dispatcher } from 'undici';
import { withActiveTraceIn } from '../lib/tracing.js';

/**
 * The `fetch` the MCP SDK's client transport is given to reach upstreams: undici's `request` on
 * the vetted dispatcher, behind the few parts of `fetch` the transport uses. undici's own `fetch`
 * implements the whole Fetch standard (a web Request, header lists guarded and sorted, the body
 * as a web stream written in chunks, timing info, a web Response): on a proxied tool call that
 * cost more of svc's CPU than any other library. `request` sends the JSON body in the same write
 * as the headers and hands the answer back as a Node stream.
 * Rules:
 * - Only what the transport sends is taken: a method, headers (a `Headers`, pairs or an object),
 *   a string or bytes body (or none), a signal. Any other body is refused (a TypeError), never
 *   sent half-understood.
 * - Redirects are never followed here (the transport follows those it allows itself, reading
 *   the 3xx answer and its `Location`), and nothing is decompressed: no `Accept-Encoding` is
 *   sent (an upstream may not compress what was not asked so).
 * - The answer has the status, the headers (a real `Headers`), `text()`, `json()`,
 *   `arrayBuffer()` and `body` (a web stream, made only when read: an event stream's). A body
 *   left unread is left to the transport, which reads or cancels every one it gets.
 * - The active trace rides on every request (`traceparent`), as on the rest of svc's outbound calls.
 * - Errors are undici's own (a refusal by the dispatcher keeps its cause chain), and an aborted
 *   signal rejects the request and ends its body.
 */
export function requestFetch(dispatcher: Dispatcher): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    if (typeof input !== 'string' && !(input instanceof URL))
      throw new TypeError('the upstream fetch takes a URL, not a Request');
    const url = typeof input === 'string' ? new URL(input) : input;
    const body = init?.body ?? null;
    if (body !== null && typeof body !== 'string' && !(body instanceof Uint8Array))
      throw new TypeError('the upstream fetch sends a string or bytes body only');
    const headers = withActiveTraceIn(plainHeaders(init?.headers));
    const answer = await dispatcher.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: (init?.method ?? 'GET').toUpperCase() as Dispatcher.HttpMethod,
      headers,
      body,
      signal: init?.signal ?? null,
    });
    return new UpstreamResponse(url.href, answer) as unknown as Response;
  }) as typeof fetch;
}

/** Request headers as undici's `request` takes them: lower-case names, one value each. */
function plainHeaders(given: RequestInit['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  if (given === undefined) return out;
  if (given instanceof Headers) {
    given.forEach((value, name) => {
      out[name] = value;
    });
    return out;
  }
  const pairs = Array.isArray(given) ? given : Object.entries(given);
  for (const [name, value] of pairs) {
    if (name === undefined || value === undefined) continue;
    const key = name.toLowerCase();
    out[key] = key in out ? `${out[key]}, ${value}` : value;
  }
  return out;
}

/** The part of a web Response the SDK's transport reads, over undici's answer. */
class UpstreamResponse {
  readonly status: number;
  readonly statusText: string;
  readonly ok: boolean;
  readonly headers = new Headers();
  readonly redirected = false;
  readonly type = 'basic';
  readonly #answer: Dispatcher.ResponseData;
  #web: ReadableStream<Uint8Array> | undefined;

  readonly url: string;

  constructor(url: string, answer: Dispatcher.ResponseData) {
    this.url = url;
    this.#answer = answer;
    this.status = answer.statusCode;
    this.statusText = answer.statusText ?? '';
    this.ok = this.status >= 200 && this.status < 300;
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined) continue;
      if (Array.isArray(value)) for (const v of value) this.headers.append(name, v);
      else this.headers.append(name, value);
    }
  }

  get body(): ReadableStream<Uint8Array> | null {
    this.#web ??= Readable.toWeb(this.#answer.body) as unknown as WebReadableStream<Uint8Array> as never;
    return this.#web ?? null;
  }

  get bodyUsed(): boolean {
    return this.#answer.body.bodyUsed;
  }

  text(): Promise<string> {
    return this.#answer.body.text();
  }

  json(): Promise<unknown> {
    return this.#answer.body.json();
  }

  arrayBuffer(): Promise<ArrayBuffer> {
    return this.#answer.body.arrayBuffer();
  }
}
