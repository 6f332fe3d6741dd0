import { RemoteError, UnreachableError } from './http-client.js';

/**
 * A person's own session through the server, for the commands that only a person may run (an
 * owner creating a workspace): sign in with e-mail and password (and a two-factor code), make
 * the calls with the session cookie and the console's CSRF header, then sign out, so no session
 * outlives the command. Errors are the server's, as the other commands see them (RemoteError).
 */
export interface PersonCredentials {
  email: string;
  password: string;
  totp?: string | undefined;
}

export type SessionCall = <T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) => Promise<T>;

async function send<T>(
  baseUrl: string,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  options: { body?: unknown; cookie?: string },
): Promise<{ value: T; cookies: string[] }> {
  const url = new URL(path, baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`).toString();
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, {
      method,
      headers: {
        accept: 'application/json',
        'x-svc-csrf': '1',
        ...(options.cookie ? { cookie: options.cookie } : {}),
        ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      redirect: 'error',
      signal: AbortSignal.timeout(60_000),
    });
    text = await res.text();
  } catch (err) {
    throw new UnreachableError(baseUrl, err);
  }
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    throw new RemoteError(res.status, 'invalid_response', `the server at ${baseUrl} did not answer JSON`, undefined);
  }
  if (res.status >= 400) {
    const e = ((parsed as { error?: Record<string, unknown> }).error ?? {}) as Record<string, unknown>;
    const { type, message, fix, docs: _docs, requestId: _requestId, ...details } = e;
    throw new RemoteError(
      res.status,
      typeof type === 'string' ? type : 'unknown',
      typeof message === 'string' ? message : `HTTP ${res.status}`,
      typeof fix === 'string' ? fix : undefined,
      details,
    );
  }
  return { value: parsed as T, cookies: res.headers.getSetCookie() };
}

/** Runs `fn` signed in as the person, and signs out after, whatever `fn` did. */
export async function asPerson<T>(
  baseUrl: string,
  who: PersonCredentials,
  fn: (call: SessionCall) => Promise<T>,
): Promise<T> {
  const { cookies } = await send(baseUrl, 'POST', '/api/session', {
    body: { email: who.email, password: who.password, ...(who.totp ? { totp: who.totp } : {}) },
  });
  const cookie = cookies.map((c) => c.split(';')[0]).join('; ');
  const call: SessionCall = async <T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) =>
    (await send<T>(baseUrl, method, path, { cookie, ...(body === undefined ? {} : { body }) })).value;
  try {
    return await fn(call);
  } finally {
    await call('DELETE', '/api/session').catch(() => undefined);
  }
}
