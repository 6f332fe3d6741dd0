import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CacheUsage } from './cache-usage.js';
import type { Json } from './http.js';

/**
 * The common part of the loopback mocks of the adapted vendors (mock-azure.ts, mock-gemini.ts,
 * mock-bedrock.ts): a real HTTP server on 127.0.0.1 that records every request (before any
 * fault or check), applies queued faults by upstream model, checks the vendor's authentication
 * as the real service would, and answers in the vendor's shape. Replies are deterministic, as in
 * mock-vendor.ts: `echo: ` + the last user text, word-count usage, and a tool call when tools are
 * offered and the conversation ends with a user turn saying "call tool" (after the tool's result,
 * text again, so an agent loop ends).
 */

export type LoopbackFault =
  | { kind: 'status'; status: number }
  /** Answers this status, body and headers (the vendor's own error shape: RetryInfo, a context-length refusal). */
  | { kind: 'answer'; status: number; body: Json; headers?: Record<string, string> }
  | { kind: 'reset' }
  /** A stream: the socket is destroyed after this many pieces. */
  | { kind: 'cut'; afterChunks: number }
  /** A stream: the vendor's in-stream error as its first piece (Bedrock's exception message). */
  | { kind: 'exception'; type: string }
  /** Answers with prompt-cache and reasoning tokens in its usage (cache-usage.ts). */
  | { kind: 'cache'; usage: CacheUsage }
  /** Answers with this text instead of the echo (an agent's scripted turn). */
  | { kind: 'reply'; pieces: string[] }
  /** Answers with a call of this tool with this input (an agent's scripted turn). */
  | { kind: 'call'; name: string; input: Json };

export interface LoopbackCall {
  path: string;
  model: string;
  stream: boolean;
  headers: Record<string, string | string[] | undefined>;
  body: Json;
}

export interface LoopbackVendor {
  url: string;
  calls: LoopbackCall[];
  count(model?: string): number;
  fault(model: string, fault: LoopbackFault, times?: number): void;
  reset(): void;
  close(): Promise<void>;
}

export interface Exchange {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  url: URL;
  raw: string;
  body: Json;
  model: string;
  stream: boolean;
  fault: LoopbackFault | undefined;
}

export interface VendorSpec {
  /** The model and whether it streams, from the path; null: no such route. */
  route(method: string, url: URL): { model: string; stream: boolean } | null;
  /** The vendor's refusal of the request's credentials, or null when they hold. */
  authenticate(x: Exchange): Promise<Answer | null> | Answer | null;
  /** The vendor's own error answer for a status (a fault). */
  error(status: number): Answer;
  /** Writes the answer (faults already applied, except cut and exception, which are the stream's). */
  answer(x: Exchange): Promise<void> | void;
}

export interface Answer {
  status: number;
  body: Json;
  headers?: Record<string, string>;
}

export async function startLoopbackVendor(spec: VendorSpec): Promise<LoopbackVendor> {
  const calls: LoopbackCall[] = [];
  const faults = new Map<string, { fault: LoopbackFault; left: number }[]>();
  const takeFault = (model: string): LoopbackFault | undefined => {
    const queue = faults.get(model);
    const head = queue?.[0];
    if (!queue || !head) return undefined;
    if (--head.left <= 0) queue.shift();
    return head.fault;
  };
  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://mock');
    const route = spec.route(req.method ?? '', url);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    if (!route)
      return send(res, { status: 404, body: { error: { message: `no route ${req.method} ${url.pathname}` } } });
    let body: Json;
    try {
      body = JSON.parse(raw);
    } catch {
      body = null;
    }
    // A vendor whose path does not say (Azure) streams when the body asks.
    const stream = route.stream || body?.stream === true;
    calls.push({ path: url.pathname, model: route.model, stream, headers: { ...req.headers }, body });
    const fault = takeFault(route.model);
    const x: Exchange = { req, res, url, raw, body, model: route.model, stream, fault };
    if (fault?.kind === 'reset') {
      req.socket.destroy();
      return;
    }
    if (fault?.kind === 'status') return send(res, spec.error(fault.status));
    if (fault?.kind === 'answer')
      return send(res, {
        status: fault.status,
        body: fault.body,
        ...(fault.headers ? { headers: fault.headers } : {}),
      });
    const refused = await spec.authenticate(x);
    if (refused) return send(res, refused);
    if (body === null || typeof body !== 'object')
      return send(res, { ...spec.error(400), body: { message: 'the body is not a JSON object' } });
    return spec.answer(x);
  };
  const server = http.createServer({ keepAlive: true }, (req, res) => {
    res.on('error', () => {});
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, { status: 500, body: { message: String(error) } });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    count: (model) => (model === undefined ? calls.length : calls.filter((c) => c.model === model).length),
    fault(model, fault, times = 1) {
      faults.set(model, [...(faults.get(model) ?? []), { fault, left: times }]);
    },
    reset() {
      calls.length = 0;
      faults.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export function send(res: http.ServerResponse, answer: Answer): void {
  const text = JSON.stringify(answer.body);
  res.writeHead(answer.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...answer.headers,
  });
  res.end(text);
}

/** Writes each piece on its own, waiting for it to reach the socket; a `cut` fault destroys the socket midway. */
export async function writePieces(x: Exchange, contentType: string, pieces: (string | Uint8Array)[]): Promise<void> {
  x.res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-cache' });
  const cutAfter = x.fault?.kind === 'cut' ? x.fault.afterChunks : Infinity;
  let sent = 0;
  for (const piece of pieces) {
    if (sent >= cutAfter) {
      x.res.socket?.destroy();
      return;
    }
    const ok = await new Promise<boolean>((resolve) => x.res.write(piece, (error) => resolve(!error)));
    if (!ok || x.res.destroyed) return;
    sent++;
  }
  x.res.end();
}

export interface Reply {
  /** Text pieces with their leading whitespace: joined, the exact text. */
  pieces: string[];
  /** The tool to call instead of text. */
  tool?: string;
  /** The call's input when scripted; else TOOL_INPUT. */
  input?: Json;
  truncated: boolean;
  promptTokens: number;
  completionTokens: number;
}

export const TOOL_INPUT = { q: 'x' };

/** A call's input as JSON text in two pieces, split mid-text as vendors stream it. */
export function inputPieces(reply: Reply): string[] {
  const text = JSON.stringify(reply.input ?? TOOL_INPUT);
  const half = Math.floor(text.length / 2);
  return [text.slice(0, half), text.slice(half)];
}

const words = (text: string) => text.split(/\s+/).filter(Boolean);

/** The deterministic reply (see the top of the file). */
export function compose(input: {
  promptText: string;
  lastUserText: string;
  /** The conversation ends with a user turn of text (not a tool's result). */
  endsWithUserText: boolean;
  toolName: string | undefined;
  maxTokens: number | undefined;
  /** A scripted reply or call (the `reply` and `call` faults) instead of the composed one. */
  fault?: LoopbackFault | undefined;
}): Reply {
  const promptTokens = Math.max(1, words(input.promptText).length);
  const f = input.fault;
  if (f?.kind === 'call')
    return { pieces: [], tool: f.name, input: f.input, truncated: false, promptTokens, completionTokens: 5 };
  if (f?.kind === 'reply')
    return { pieces: f.pieces, truncated: false, promptTokens, completionTokens: f.pieces.length };
  if (input.toolName && input.endsWithUserText && /\bcall tool\b/i.test(input.lastUserText))
    return { pieces: [], tool: input.toolName, truncated: false, promptTokens, completionTokens: 5 };
  const all = `echo: ${input.lastUserText}`.trimEnd().match(/\s*\S+/g) ?? [];
  const limit = typeof input.maxTokens === 'number' ? Math.max(0, Math.floor(input.maxTokens)) : Infinity;
  const pieces = all.slice(0, limit);
  return { pieces, truncated: pieces.length < all.length, promptTokens, completionTokens: pieces.length };
}
