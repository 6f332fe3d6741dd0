import { request } from 'undici';

/**
 * A parsed JSON answer as a test reads it: the test reaches for the fields it checks and asserts
 * on them, and a field the answer lacks reads as undefined and fails that assertion. Where a test
 * knows the shape it names it instead (`Reply<ActionView>`, `as LedgerRecord[]`).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers under test are asserted field by field (above)
export type Json = any;

/** A small HTTP client for tests: status, headers and parsed JSON (or text) of one call. */
export interface Reply<T = Json> {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: T;
  text: string;
}

export async function call<T = Json>(
  base: string,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; json?: unknown; body?: string | Buffer } = {},
): Promise<Reply<T>> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  let body: string | Buffer | undefined = options.body;
  if (options.json !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(options.json);
  }
  const res = await request(base + path, { method: method as 'GET', headers, body: body ?? null });
  const text = await res.body.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON: keep the text */
  }
  return { status: res.statusCode, headers: res.headers, body: parsed as T, text };
}

export const bearer = (value: string) => ({ authorization: `Bearer ${value}` });

/** Console writes need the CSRF header (docs/security.md#security-model). */
export const csrf = { 'x-svc-csrf': '1' };

/**
 * What a Streamable HTTP client sends with a POST to /mcp: the credential (when there is one),
 * both answer types in Accept, and the protocol revision when the request names one.
 */
export const mcpHeaders = (token?: string, revision?: string): Record<string, string> => ({
  ...(token === undefined ? {} : bearer(token)),
  accept: 'application/json, text/event-stream',
  ...(revision === undefined ? {} : { 'mcp-protocol-version': revision }),
});

/** One JSON-RPC message POSTed to <base>/mcp with mcpHeaders, and any more headers. */
export function mcpPost(
  base: string,
  token: string | undefined,
  message: unknown,
  options: { revision?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  return call(base, 'POST', '/mcp', {
    headers: { ...mcpHeaders(token, options.revision), ...options.headers },
    json: message,
  });
}

/** The status of a `tools/list` with this token at <base>/mcp: 200 while it holds, 401 once it does not. */
export async function mcpStatus(base: string, token: string): Promise<number> {
  return (await mcpPost(base, token, { jsonrpc: '2.0', id: 1, method: 'tools/list' })).status;
}

/** Signs in through POST /api/session and returns the cookie header to send back. */
export async function signIn(base: string, email: string, password: string): Promise<string> {
  const res = await call(base, 'POST', '/api/session', { headers: csrf, json: { email, password } });
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status} ${res.text}`);
  const setCookie = res.headers['set-cookie'];
  const first = (Array.isArray(setCookie) ? setCookie[0] : setCookie) ?? '';
  return first.split(';')[0]!;
}

/**
 * Asserts an error answer of svc's error shape (docs/api.md#errors): the status, the type, a message, a fix, and
 * a requestId equal to the x-request-id header.
 */
export function assertError(t: import('ava').ExecutionContext, res: Reply, status: number, type: string): void {
  t.is(res.status, status, JSON.stringify(res.body));
  t.is(res.body?.error?.type, type);
  t.is(typeof res.body?.error?.message, 'string');
  t.true(String(res.body?.error?.fix ?? '').length > 0);
  t.is(res.body?.error?.requestId, res.headers['x-request-id']);
}

const readyOwners = new WeakMap<object, Promise<string>>();

/**
 * A signed-in session of a server's first-start owner, after replacing the one-time password
 * (until then no workspace permission holds). The change happens once per server; the new
 * password is the old one with "-changed" appended. Returns a cookie header.
 */
export async function ownerSession(server: {
  url: string;
  boot: { owner?: { email: string; password: string } };
}): Promise<string> {
  const owner = server.boot.owner;
  if (!owner) throw new Error('this server had no first-start owner');
  let ready = readyOwners.get(server);
  if (!ready) {
    ready = (async () => {
      const cookie = await signIn(server.url, owner.email, owner.password);
      const changed = `${owner.password}-changed`;
      const res = await call(server.url, 'PUT', '/api/me/password', {
        headers: { ...csrf, cookie },
        json: { currentPassword: owner.password, newPassword: changed },
      });
      if (res.status !== 200) throw new Error(`password change failed: ${res.status} ${res.text}`);
      return changed;
    })();
    readyOwners.set(server, ready);
  }
  return signIn(server.url, owner.email, await ready);
}
