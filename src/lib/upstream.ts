import { Pool, type Dispatcher } from 'undici';

/**
 * Outbound HTTP to model vendors: one undici Pool per upstream origin (keep-alive connections
 * reused across requests), with a connect timeout, a timeout until the answer's headers and one
 * between body chunks. A call is cancelled through its AbortSignal (the client went away).
 * Tests and benchmarks pass their own dispatcher factory (STYLE rule 8).
 */
export interface UpstreamOptions {
  connections: number;
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
}

export interface UpstreamAnswer {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: Dispatcher.ResponseData['body'];
}

export interface Upstream {
  /** POSTs JSON bytes to `base` + `path` (base may carry a path prefix). */
  post(path: string, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<UpstreamAnswer>;
  close(): Promise<void>;
}

export function createUpstream(baseUrl: string, options: UpstreamOptions): Upstream {
  const base = new URL(baseUrl);
  const prefix = base.pathname.replace(/\/+$/, '');
  const pool = new Pool(base.origin, {
    connections: options.connections,
    connect: { timeout: options.connectTimeoutMs },
    headersTimeout: options.headersTimeoutMs,
    bodyTimeout: options.bodyTimeoutMs,
    keepAliveTimeout: 30_000,
  });
  return {
    async post(path, headers, body, signal) {
      const answer = await pool.request({
        method: 'POST',
        path: `${prefix}${path}`,
        body,
        signal,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
      });
      return { statusCode: answer.statusCode, headers: answer.headers, body: answer.body };
    },
    close: () => pool.close(),
  };
}
