import { request } from 'undici';

/** The HTTP client the commands use against a running server (undici, as every outbound call). */
export class UnreachableError extends Error {
  constructor(url: string, cause: unknown) {
    super(`cannot reach the server at ${url}: ${(cause as Error).message ?? String(cause)}`, { cause });
    this.name = 'UnreachableError';
  }
}

/** The server answered with an error of the SPEC.md shape. */
export class RemoteError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly fix: string | undefined,
    /** The error object's other members (`count`, `oldCount`, `errors`, ...), beside docs and requestId. */
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'RemoteError';
  }
}

export async function callServer<T>(
  baseUrl: string,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  options: { bearer?: string; body?: unknown } = {},
): Promise<T> {
  const url = new URL(path, baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`).toString();
  let res;
  try {
    res = await request(url, {
      method,
      headers: {
        accept: 'application/json',
        ...(options.bearer ? { authorization: `Bearer ${options.bearer}` } : {}),
        ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: options.body === undefined ? null : JSON.stringify(options.body),
      headersTimeout: 15_000,
      bodyTimeout: 60_000,
    });
  } catch (err) {
    throw new UnreachableError(baseUrl, err);
  }
  const text = await res.body.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    throw new RemoteError(
      res.statusCode,
      'invalid_response',
      `the server at ${baseUrl} did not answer JSON`,
      undefined,
    );
  }
  if (res.statusCode >= 400) {
    const e = (parsed as { error?: { type?: string; message?: string; fix?: string } }).error ?? {};
    const { type, message, fix, docs: _docs, requestId: _requestId, ...details } = e as Record<string, unknown>;
    throw new RemoteError(
      res.statusCode,
      typeof type === 'string' ? type : 'unknown',
      typeof message === 'string' ? message : `HTTP ${res.statusCode}`,
      typeof fix === 'string' ? fix : undefined,
      details,
    );
  }
  return parsed as T;
}
