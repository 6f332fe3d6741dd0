import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError } from '@modelcontextprotocol/client';
import { CREDENTIAL_PROBLEMS } from './upstream-auth/holders.js';
import { refusedBy } from '../lib/safe-target.js';

/**
 * Why an upstream MCP server could not be used (issue 34): what adding it answers, and what the
 * console shows, so that the person adding it can act (a wrong secret, a wrong path, a proxy in
 * the way) instead of reading "could not be reached".
 * Causes:
 * - `http_status`: it answered an HTTP error; `status` and the first BODY_EXCERPT characters of
 *   the body (`body`).
 * - `timeout`: no answer within the deadline (`mcp.upstreamTimeoutMs`).
 * - `dns`: its name does not resolve; `tls`: the TLS handshake failed (the certificate named in
 *   `message`); `connection`: the connection was refused, reset or closed.
 * - `refused_address`: svc's own rule refused the address (loopback, private, link-local).
 * - `not_mcp`: it answered, but not with MCP (not JSON-RPC, or a content type MCP does not use).
 * - `protocol_version`: it speaks no protocol version svc speaks.
 * - `mcp_error`: it answered the handshake or the listing with a JSON-RPC error.
 * The upstream's own words (its body, status text, error messages) may echo what it was sent:
 * the server's bearer secret is replaced by `[secret]` in every text of a diagnosis (as sent, as
 * JSON or a URL would escape it) before any of it is cut or leaves.
 */
export const BODY_EXCERPT = 200;

export type UpstreamCause =
  | 'http_status'
  | 'timeout'
  | 'dns'
  | 'tls'
  | 'connection'
  | 'refused_address'
  | 'not_mcp'
  | 'protocol_version'
  | 'mcp_error';

export interface UpstreamProblem {
  cause: UpstreamCause;
  message: string;
  status?: number;
  body?: string;
}

const DNS = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EAI_FAIL']);
const CONNECTION = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_SOCKET']);
const TLS = /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|ERR_TLS/;

/** The first code found along an error's cause chain (undici wraps the socket's error). */
function codeOf(err: unknown): string | undefined {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth += 1) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/** `text` with every form of `secret` a reply could echo replaced by `[secret]`. */
export function withoutSecret(text: string, secret: string | null | undefined): string {
  if (!secret) return text;
  const forms = new Set([secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret)]);
  let out = text;
  for (const form of [...forms].sort((a, b) => b.length - a.length)) out = out.split(form).join('[secret]');
  return out;
}

/**
 * An upstream's own JSON-RPC error with `secret` taken out of its message and of every string of
 * its data (an upstream that echoes the request's headers would hand the server's secret on).
 */
export function errorWithoutSecret(err: ProtocolError, secret: string | null | undefined): ProtocolError {
  if (!secret) return err;
  // Every string of the data, keys included, walked (never its JSON text re-parsed: a secret may
  // look like JSON).
  const clean = (value: unknown, depth: number): unknown => {
    if (typeof value === 'string') return withoutSecret(value, secret);
    if (value === null || typeof value !== 'object' || depth > 64) return value;
    if (Array.isArray(value)) return value.map((v) => clean(v, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value))
      Object.defineProperty(out, withoutSecret(k, secret), {
        value: clean(v, depth + 1),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    return out;
  };
  return ProtocolError.fromError(err.code, withoutSecret(err.message, secret), clean(err.data, 0));
}

/** Why `err` made an upstream unusable; `secret` (the server's bearer secret) appears in none of its texts. */
export function diagnose(err: unknown, timeoutMs: number, secret?: string | null): UpstreamProblem {
  const { body, message, ...rest } = cause(err, timeoutMs);
  return {
    ...rest,
    message: withoutSecret(message, secret),
    // Cut after the secret is taken out (a cut through it would leave its start), with room for its longest form.
    ...(body !== undefined
      ? { body: withoutSecret(body.slice(0, BODY_EXCERPT + 6 * (secret?.length ?? 0)), secret).slice(0, BODY_EXCERPT) }
      : {}),
  };
}

function cause(err: unknown, timeoutMs: number): UpstreamProblem {
  const refused = refusedBy(err);
  if (refused) return { cause: 'refused_address', message: refused.message.replace(/^refused: /, '') };
  // An upstream's 401 that the holder's credentials could not answer (upstream-auth.ts): its words say what to do.
  const data = err instanceof ProtocolError ? (err.data as { type?: unknown } | undefined) : undefined;
  if (typeof data?.type === 'string' && CREDENTIAL_PROBLEMS.has(data.type))
    return { cause: 'http_status', status: 401, message: `it answered HTTP 401 (${(err as ProtocolError).message})` };
  if (err instanceof SdkHttpError) {
    const text = typeof err.data.text === 'string' ? err.data.text : '';
    return {
      cause: 'http_status',
      status: err.status,
      body: text,
      message: `it answered HTTP ${err.status}${err.statusText ? ` ${err.statusText}` : ''}`,
    };
  }
  if (err instanceof SdkError) {
    if (err.code === SdkErrorCode.RequestTimeout)
      return { cause: 'timeout', message: `it did not answer within ${timeoutMs} ms` };
    if (err.code === SdkErrorCode.ClientHttpUnexpectedContent)
      return { cause: 'not_mcp', message: `it is not an MCP server (${err.message})` };
    if (err.code === SdkErrorCode.EraNegotiationFailed)
      return { cause: 'protocol_version', message: `it speaks no protocol version svc speaks (${err.message})` };
  }
  if (err instanceof ProtocolError)
    return { cause: 'mcp_error', message: `it answered with the JSON-RPC error ${err.code}: ${err.message}` };
  const message = err instanceof Error ? err.message : String(err);
  if (/protocol version is not supported/.test(message))
    return { cause: 'protocol_version', message: `it speaks no protocol version svc speaks (${message})` };
  if (err instanceof DeadlineError) return { cause: 'timeout', message: `it did not answer within ${timeoutMs} ms` };
  const code = codeOf(err);
  if (code && DNS.has(code)) return { cause: 'dns', message: `its name does not resolve (${code})` };
  if (code && TLS.test(code)) return { cause: 'tls', message: `the TLS handshake failed (${code})` };
  if (code && CONNECTION.has(code)) return { cause: 'connection', message: `the connection failed (${code})` };
  // A body that is not JSON-RPC (parsed by the SDK's schemas, or not JSON at all).
  if (err instanceof SyntaxError || (err as { name?: string }).name === 'ZodError' || /JSON|JSONRPC/i.test(message))
    return { cause: 'not_mcp', message: 'it is not an MCP server (its answer is not JSON-RPC)' };
  return { cause: 'connection', message: `it could not be reached (${code ?? message})` };
}

/** A deadline passed: the work goes on, unwaited. */
export class DeadlineError extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
  }
}

/** `work`'s outcome, or a DeadlineError after `ms` (the work itself is not stopped). */
export function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(ms)), ms);
    timer.unref();
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
