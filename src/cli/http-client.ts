/**
 * The HTTP client the commands use against a running server: Node's own fetch, which is undici
 * built into Node. Loading the undici package would cost a command more time than its whole run
 * (over a hundred modules); the built-in one is already part of Node. Timeouts: 60 s in all.
 */
export class UnreachableError extends Error {
  constructor(url: string, cause: unknown) {
    // fetch says "fetch failed"; the reason (ECONNREFUSED, a DNS failure, a timeout) is its cause.
    const why = (cause as { cause?: { message?: string } }).cause?.message ?? (cause as Error).message ?? String(cause);
    super(`cannot reach the server at ${url}: ${why}`, { cause });
    this.name = 'UnreachableError';
  }
}

/** The server answered with an error in svc's error shape (`{ error: { type, message, fix, ... } }`). */
export class RemoteError extends Error {
  readonly status: number;
  readonly type: string;
  readonly fix: string | undefined;
  /** The error object's other members (`count`, `oldCount`, `errors`, ...), beside docs and requestId. */
  readonly details: Record<string, unknown>;
  constructor(
    status: number,
    type: string,
    message: string,
    fix: string | undefined,
    details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'RemoteError';
    this.status = status;
    this.type = type;
    this.fix = fix;
    this.details = details;
  }
}

export async function callServer<T>(
  baseUrl: string,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  options: { bearer?: string; body?: unknown } = {},
): Promise<T> {
  const url = new URL(path, baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`).toString();
  let status: number;
  let text: string;
  try {
    const res = await fetch(url, {
      method,
      headers: {
        accept: 'application/json',
        ...(options.bearer ? { authorization: `Bearer ${options.bearer}` } : {}),
        ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      redirect: 'error',
      signal: AbortSignal.timeout(60_000),
    });
    status = res.status;
    text = await res.text();
  } catch (err) {
    throw new UnreachableError(baseUrl, err);
  }
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    throw new RemoteError(status, 'invalid_response', `the server at ${baseUrl} did not answer JSON`, undefined);
  }
  if (status >= 400) {
    const e = (parsed as { error?: { type?: string; message?: string; fix?: string } }).error ?? {};
    const { type, message, fix, docs: _docs, requestId: _requestId, ...details } = e as Record<string, unknown>;
    throw new RemoteError(
      status,
      typeof type === 'string' ? type : 'unknown',
      typeof message === 'string' ? message : `HTTP ${status}`,
      typeof fix === 'string' ? fix : undefined,
      details,
    );
  }
  return parsed as T;
}
