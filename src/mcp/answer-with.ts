import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';

/**
 * Serves a Node request with a web-standard handler (the SDK's), which `fetchLike` hands the
 * already parsed body: the request's method and headers are sent on, the answer (a JSON body or
 * an event stream) is written back, and the handler's request is aborted when the client goes
 * away before its answer was written.
 * - The request carries no body: `fetchLike` passes it parsed (the SDK's parsedBody), and
 *   serializing it again only for the SDK not to read it cost CPU.
 * - An answer that is not an event stream is read whole and written with its length, in one
 *   write to the socket; piping it through a stream wrote it chunked, its end in a second write.
 *   An event stream is piped as it comes.
 * - Nothing is aborted once the answer is written: aborting a finished request built an
 *   AbortError for nothing, on every request.
 */
export async function answerWith(
  fetchLike: (request: Request) => Promise<Response>,
  req: IncomingMessage,
  res: ServerResponse,
  url: string,
): Promise<void> {
  const abort = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name === 'content-length' || name === 'transfer-encoding') continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  const response = await fetchLike(
    new Request(url, { method: (req.method ?? 'POST').toUpperCase(), headers, signal: abort.signal }),
  );
  const out: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    out[name] = value;
  });
  if (!response.body) {
    res.writeHead(response.status, out).end();
    return;
  }
  if (!/^text\/event-stream\b/i.test(out['content-type'] ?? '')) {
    let body: Buffer;
    try {
      body = Buffer.from(await response.arrayBuffer());
    } catch {
      res.destroy();
      return;
    }
    delete out['transfer-encoding'];
    out['content-length'] = String(body.length);
    res.writeHead(response.status, out).end(body);
    return;
  }
  res.writeHead(response.status, out);
  const stream = Readable.fromWeb(response.body as unknown as WebReadableStream<Uint8Array>);
  stream.on('error', () => res.destroy());
  res.once('close', () => stream.destroy());
  stream.pipe(res);
}
